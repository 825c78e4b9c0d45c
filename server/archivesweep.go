package server

import (
	"context"
	"errors"
	"path"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/archive"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/egress"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
)

// archiveSweepInterval is how often the control plane deletes archived
// payloads past their workspace's retention_days.
const archiveSweepInterval = time.Hour

// ArchiveSweepLease names the lease a control-plane replica holds while it
// sweeps (store.TakeLease): one replica sweeps at a time, so no deletion
// is audited twice.
const ArchiveSweepLease = "archive-sweep"

// archiveCheckTimeout bounds the reachability check of a workspace's
// bucket that keeps no retention (the sweep's listing is the check of the
// others).
const archiveCheckTimeout = 10 * time.Second

// ErrLeaseLost stops a sweep whose replica no longer holds the lease.
var ErrLeaseLost = errors.New("the archive sweep's lease was taken over by another replica")

// SweepArchives deletes, in every workspace whose archive keeps payloads
// for retention_days, the objects of days past it, auditing each
// deletion (archive.payload_deleted), and records for every enabled
// archive whether its bucket answered (the workspace's archive_check,
// which gw status shows). One workspace's failure (its store down) is
// returned after the others are swept; it is tried again at the next
// sweep. held, when not nil, is asked before each workspace whether this
// replica still holds the sweep's lease; when it does not, the sweep
// stops with ErrLeaseLost.
func SweepArchives(ctx context.Context, st *store.Store, kr *secrets.Keyring, policy func() egress.Policy, now time.Time, held func() bool) (int, error) {
	wss, err := st.ArchivingWorkspaces(ctx)
	if err != nil {
		return 0, err
	}
	var first error
	total := 0
	for i := range wss {
		ws := &wss[i]
		a := ws.Archive
		if a == nil || (a.RetentionDays <= 0 && !a.Enabled) {
			continue
		}
		if held != nil && !held() {
			return total, cmpErr(first, ErrLeaseLost)
		}
		n, err := sweepWorkspace(ctx, st, kr, policy, ws, now)
		total += n
		first = cmpErr(first, err)
		if a.Enabled {
			c := &store.ArchiveCheck{OK: err == nil, CheckedAt: store.Now(), By: "sweep"}
			if err != nil {
				c.Error = err.Error()
			}
			first = cmpErr(first, st.SetArchiveCheck(ctx, ws.ID, c))
		}
	}
	return total, first
}

// sweepWorkspace deletes one workspace's expired objects, or, when it
// keeps them for ever, checks that its bucket answers.
func sweepWorkspace(ctx context.Context, st *store.Store, kr *secrets.Keyring, policy func() egress.Policy, ws *store.Workspace, now time.Time) (int, error) {
	a := ws.Archive
	secret, err := kr.Open(a.SecretSealed, secrets.ArchiveAAD(ws.ID, a.Endpoint, a.Bucket, a.AccessKeyID))
	if err != nil {
		return 0, errors.New("the archive's secret access key could not be opened with this instance's key")
	}
	c := archive.NewClient(archive.Destination{Endpoint: a.Endpoint, Region: a.Region, Bucket: a.Bucket, Prefix: a.Prefix,
		AccessKeyID: a.AccessKeyID, SecretAccessKey: string(secret), PathStyle: a.PathStyle}, egress.NewDialer(policy))
	if a.RetentionDays <= 0 {
		cctx, cancel := context.WithTimeout(ctx, archiveCheckTimeout)
		defer cancel()
		return 0, c.Check(cctx)
	}
	return archive.Sweep(ctx, c, a.Prefix, ws.OrgID, ws.ID, a.RetentionDays, now, func(key string) error {
		return backend.AuditArchiveDeletion(ctx, st, backend.ArchiveDeletion{Workspace: ws, Key: key, RetentionDays: a.RetentionDays,
			UsageEventID: strings.TrimSuffix(path.Base(key), ".json.gz")})
	})
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// SweepArchivesLeased is one replica's turn at the hourly sweep: it
// sweeps only when it gets (or renews) the lease, held for ttl — the
// sweep's interval, so the replicas sweep once per interval between them,
// and another takes over within one interval of the holder's end. The
// lease is renewed before each workspace, so a long sweep keeps it and a
// replica that lost it stops. swept says whether this replica swept.
func SweepArchivesLeased(ctx context.Context, st *store.Store, holder string, ttl time.Duration, kr *secrets.Keyring,
	policy func() egress.Policy, now time.Time) (swept bool, n int, err error) {
	ok, err := st.TakeLease(ctx, ArchiveSweepLease, holder, ttl, store.Now())
	if err != nil || !ok {
		return false, 0, err
	}
	held := func() bool {
		ok, err := st.TakeLease(ctx, ArchiveSweepLease, holder, ttl, store.Now())
		return err == nil && ok
	}
	n, err = SweepArchives(ctx, st, kr, policy, now, held)
	return true, n, err
}

// sweepArchives runs the retention sweep every archiveSweepInterval on
// the control plane: every replica runs the loop, and the one holding the
// sweep's lease sweeps (SweepArchivesLeased).
func (s *Server) sweepArchives(_ context.Context, cp *controlPlane) error {
	if s.cfg.Keyring == nil {
		return nil
	}
	holder := uuid.NewString()
	s.loops = append(s.loops, func(ctx context.Context) {
		every(ctx, archiveSweepInterval, func() {
			policy := s.cfg.Egress
			if st, err := cp.st.GetInstanceState(ctx); err == nil {
				e := st.EgressSetting()
				policy = policy.WithInstance(egress.ParseRanges(e.Deny), egress.ParseRanges(e.Allow))
			}
			_, n, err := SweepArchivesLeased(ctx, cp.st, holder, archiveSweepInterval, s.cfg.Keyring, func() egress.Policy { return policy }, time.Now())
			if err != nil && ctx.Err() == nil {
				s.log.Warn("archive retention sweep", "deleted", n, "error", err)
			}
		})
	})
	return nil
}
