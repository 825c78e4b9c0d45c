package publish

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/store"
)

// Publisher keeps stored bundles current for data planes that poll them:
// the control-plane role, where no data plane runs in the process. (With
// one in the process, publish.Refresher also admits what it compiles.)
type Publisher struct {
	Compiler *Compiler
	Store    *store.Store
}

// Refresh recompiles one organization's bundle. A deleted organization's
// bundle went with it, so there is nothing to do.
func (p *Publisher) Refresh(ctx context.Context, orgID uuid.UUID) error {
	if _, err := p.Compiler.Compile(ctx, orgID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return nil
}

// RefreshAll recompiles every organization's bundle; one that fails does
// not stop the others.
func (p *Publisher) RefreshAll(ctx context.Context) error {
	ids, err := p.Store.ListOrganizationIDs(ctx)
	if err != nil {
		return fmt.Errorf("list organizations: %w", err)
	}
	var errs []error
	for _, id := range ids {
		if err := p.Refresh(ctx, id); err != nil {
			errs = append(errs, fmt.Errorf("organization %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}
