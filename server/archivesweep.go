package server

import (
	"context"
	"path"
	"strings"
	"time"

	"github.com/gw-gateway/gw/server/archive"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/egress"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
)

// archiveSweepInterval is how often the control plane deletes archived
// payloads past their workspace's retention_days.
const archiveSweepInterval = time.Hour

// SweepArchives deletes, in every workspace whose archive keeps payloads
// for retention_days, the objects of days past it, auditing each
// deletion (archive.payload_deleted). One workspace's failure (its store
// down) is returned after the others are swept; it is tried again at the
// next sweep.
func SweepArchives(ctx context.Context, st *store.Store, kr *secrets.Keyring, policy func() egress.Policy, now time.Time) (int, error) {
	wss, err := st.ArchivingWorkspaces(ctx)
	if err != nil {
		return 0, err
	}
	var first error
	total := 0
	for i := range wss {
		ws := &wss[i]
		a := ws.Archive
		if a == nil || a.RetentionDays <= 0 {
			continue
		}
		secret, err := kr.Open(a.SecretSealed, secrets.ArchiveAAD(ws.ID, a.Endpoint, a.Bucket, a.AccessKeyID))
		if err != nil {
			first = cmpErr(first, err)
			continue
		}
		c := archive.NewClient(archive.Destination{Endpoint: a.Endpoint, Region: a.Region, Bucket: a.Bucket, Prefix: a.Prefix,
			AccessKeyID: a.AccessKeyID, SecretAccessKey: string(secret), PathStyle: a.PathStyle}, egress.NewDialer(policy))
		n, err := archive.Sweep(ctx, c, a.Prefix, ws.OrgID, ws.ID, a.RetentionDays, now, func(key string) error {
			return backend.AuditArchiveDeletion(ctx, st, backend.ArchiveDeletion{Workspace: ws, Key: key, RetentionDays: a.RetentionDays,
				UsageEventID: strings.TrimSuffix(path.Base(key), ".json.gz")})
		})
		total += n
		first = cmpErr(first, err)
	}
	return total, first
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// sweepArchives runs SweepArchives every archiveSweepInterval on the
// control plane (every replica: deleting twice is harmless, and a second
// replica finds nothing left to delete or audit).
func (s *Server) sweepArchives(_ context.Context, cp *controlPlane) error {
	if s.cfg.Keyring == nil {
		return nil
	}
	s.loops = append(s.loops, func(ctx context.Context) {
		every(ctx, archiveSweepInterval, func() {
			policy := s.cfg.Egress
			if st, err := cp.st.GetInstanceState(ctx); err == nil {
				e := st.EgressSetting()
				policy = policy.WithInstance(egress.ParseRanges(e.Deny), egress.ParseRanges(e.Allow))
			}
			n, err := SweepArchives(ctx, cp.st, s.cfg.Keyring, func() egress.Policy { return policy }, time.Now())
			if err != nil && ctx.Err() == nil {
				s.log.Warn("archive retention sweep", "deleted", n, "error", err)
			}
		})
	})
	return nil
}
