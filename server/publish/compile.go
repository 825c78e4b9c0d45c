package publish

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/store"
)

// Compiler builds organizations' bundles from the database and stores them.
type Compiler struct {
	Store  *store.Store
	Signer ed25519.PrivateKey
}

// maxCompileAttempts bounds the retries when another compiler stores a
// bundle of the same organization between our read and our write.
const maxCompileAttempts = 5

// Compile brings orgID's stored bundle up to date and returns it. When the
// content is what the stored bundle already carries, the stored bundle is
// returned as it is, same version: compiling after every change, or twice,
// never makes data planes re-admit identical content. Otherwise the new
// bundle takes the next version.
//
// Compilers may run concurrently, on any replica: the write is conditional
// on the version read, and a compiler that loses starts over from what the
// winner stored, so the last one to finish has seen every committed change.
// The Compiler's Store must not be bound to a transaction.
//
// An organization that does not exist gives an error wrapping
// store.ErrNotFound.
func (c *Compiler) Compile(ctx context.Context, orgID uuid.UUID) (*bundle.Signed, error) {
	return c.compile(ctx, orgID, false)
}

// Republish stores the organization's bundle under a new version even when
// its content has not changed: what a remote data plane receives of it
// has (an enrollment now leaves platform credentials out, or lets them
// in), and data planes admit only newer versions.
func (c *Compiler) Republish(ctx context.Context, orgID uuid.UUID) (*bundle.Signed, error) {
	return c.compile(ctx, orgID, true)
}

func (c *Compiler) compile(ctx context.Context, orgID uuid.UUID, republish bool) (*bundle.Signed, error) {
	for range maxCompileAttempts {
		signed, raced, err := c.compileOnce(ctx, orgID, republish)
		if err != nil || !raced {
			return signed, err
		}
	}
	return nil, fmt.Errorf("compile bundle for organization %s: other compilers kept storing newer versions", orgID)
}

// compileOnce reads the stored bundle and then the content, compares, and
// stores a new version unless another compiler stored one since our read;
// raced reports that it did. The stored bundle is read first so that any
// bundle stored after it makes our write fail.
func (c *Compiler) compileOnce(ctx context.Context, orgID uuid.UUID, republish bool) (out *bundle.Signed, raced bool, err error) {
	var prev *store.Bundle
	var body *bundle.Body
	// One transaction, so that on SQLite every read sees one snapshot.
	err = c.Store.InTx(ctx, func(tx *store.Store) error {
		if _, err := tx.GetOrganization(ctx, orgID); err != nil {
			return fmt.Errorf("organization %s: %w", orgID, err)
		}
		prev, err = tx.GetBundle(ctx, orgID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			prev = nil
		case err != nil:
			return fmt.Errorf("read stored bundle: %w", err)
		}
		body, err = readContent(ctx, tx, orgID)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	if prev != nil && !republish && sameContent(prev, body) {
		signed := signedFromRow(prev)
		return &signed, false, nil
	}
	body.Version = 1
	if prev != nil {
		body.Version = prev.Version + 1
	}
	body.CompiledAt = store.Now()
	if err := body.Validate(); err != nil {
		return nil, false, fmt.Errorf("compiled bundle fails its own checks: %w", err)
	}
	signed, err := bundle.Sign(body, c.Signer)
	if err != nil {
		return nil, false, err
	}
	stored, err := c.Store.SaveBundle(ctx, storedRow(signed, body.CompiledAt))
	if err != nil {
		return nil, false, fmt.Errorf("store bundle: %w", err)
	}
	if !stored {
		return nil, true, nil
	}
	return &signed, false, nil
}

// sameContent reports whether the stored bundle carries exactly next's
// content. Every bundle has a version and compile time of its own, so next
// is encoded with the stored bundle's and the bytes compared: no need to
// decode the stored body. Should the encodings differ for any reason other
// than content (a new build writing a new format, say), the answer is
// "different" and the cost one needless version.
func sameContent(prev *store.Bundle, next *bundle.Body) bool {
	candidate := *next
	candidate.Version, candidate.CompiledAt = prev.Version, prev.CompiledAt.UTC()
	data, err := json.Marshal(&candidate)
	return err == nil && bytes.Equal(data, []byte(prev.Body))
}

// signedFromRow is the stored form of a bundle as it travels.
func signedFromRow(b *store.Bundle) bundle.Signed {
	return bundle.Signed{OrgID: b.OrgID, Version: b.Version, Hash: b.Hash, Signature: b.Signature, Body: []byte(b.Body)}
}

func storedRow(s bundle.Signed, compiledAt time.Time) *store.Bundle {
	return &store.Bundle{
		OrgID: s.OrgID, Version: s.Version, Hash: s.Hash, Signature: s.Signature,
		Body: string(s.Body), CompiledAt: compiledAt,
	}
}
