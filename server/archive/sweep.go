package archive

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Sweep deletes the workspace's objects of days that ended retentionDays
// or more before now (Expired), calling deleted with each key removed so
// the caller audits it; it stops at the first error.
func Sweep(ctx context.Context, c *Client, prefix string, org, workspace uuid.UUID, retentionDays int, now time.Time, deleted func(key string) error) (int, error) {
	if retentionDays <= 0 {
		return 0, nil
	}
	wp := WorkspacePrefix(prefix, org, workspace)
	var expired []string
	if err := c.List(ctx, wp, func(key string) error {
		if Expired(wp, key, now, retentionDays) {
			expired = append(expired, key)
		}
		return nil
	}); err != nil {
		return 0, err
	}
	n := 0
	for _, k := range expired {
		if err := c.Delete(ctx, k); err != nil {
			return n, err
		}
		n++
		if deleted != nil {
			if err := deleted(k); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}
