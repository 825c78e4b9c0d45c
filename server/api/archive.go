package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/gw-gateway/gw/server/archive"
	"github.com/gw-gateway/gw/server/egress"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// bucketName is an S3 bucket name (lower case, digits, dots, hyphens).
var bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// archiveIn is an archive setting as read from a body: the secret in
// the clear (sealed by sealArchive), absent when left out.
type archiveIn struct {
	a      store.Archive
	secret string
}

// readArchive reads a workspace update's archive member: absent keeps
// it, null clears it, an object replaces it. The endpoint is held to the
// egress policy (a URL gw may not call is refused when saved).
func readArchive(ctx context.Context, p egress.Policy, o *validate.Object) **archiveIn {
	v, ok := o.Raw("archive")
	if !ok {
		return nil
	}
	var out *archiveIn
	if v == nil {
		return &out
	}
	loc := o.Loc().With("archive")
	errs := o.Errors()
	obj := validate.ReadObject(v, loc, errs)
	if obj == nil {
		return &out
	}
	in := &archiveIn{}
	if v, ok := obj.Require("enabled"); ok {
		in.a.Enabled, _ = validate.Bool(v, loc.With("enabled"), errs)
	}
	if v, ok := obj.Raw("retention_days"); ok && v != nil {
		n, _ := validate.Int(v, loc.With("retention_days"), validate.IntRule{Min: validate.Bound(0), Max: validate.Bound(3650)}, errs)
		in.a.RetentionDays = int(n)
	}
	in.a.Include = []string{archive.IncludeRequest, archive.IncludeResponse}
	if v, ok := obj.Raw("include"); ok {
		var inc []string
		validate.List(v, loc.With("include"), validate.ListRule{Min: 1, Max: 2}, errs, func(item any, il validate.Loc) {
			s, ok := validate.Literal(item, il, []string{archive.IncludeRequest, archive.IncludeResponse}, errs)
			if ok && strings.Contains(strings.Join(inc, ","), s) {
				errs.Add(il, "value_error", "Value error, "+s+" is listed twice", s, nil)
				return
			}
			if ok {
				inc = append(inc, s)
			}
		})
		in.a.Include = inc
	}
	if v, ok := obj.Require("destination"); ok {
		dl := loc.With("destination")
		d := validate.ReadObject(v, dl, errs)
		if d != nil {
			if v, ok := d.Require("kind"); ok {
				validate.Literal(v, dl.With("kind"), []string{"s3"}, errs)
			}
			if v, ok := d.Require("endpoint"); ok {
				if s, ok := validate.String(v, dl.With("endpoint"), validate.StringRule{Min: 1, Max: 2048, NoControl: true}, errs); ok {
					if !httpURL(s) {
						errs.Add(dl.With("endpoint"), "url_parsing", "Input should be an absolute http(s) URL", s, nil)
					} else {
						checkEgress(ctx, p, errs, dl.With("endpoint"), s, s)
					}
					in.a.Endpoint = strings.TrimRight(s, "/")
				}
			}
			if v, ok := d.Raw("region"); ok && v != nil {
				in.a.Region, _ = validate.String(v, dl.With("region"), validate.StringRule{Max: 64, NoControl: true}, errs)
			}
			if v, ok := d.Require("bucket"); ok {
				if s, ok := validate.String(v, dl.With("bucket"), validate.StringRule{Min: 3, Max: 63}, errs); ok {
					if !bucketName.MatchString(s) {
						errs.Add(dl.With("bucket"), "value_error", "Value error, a bucket name is 3 to 63 lower-case letters, digits, dots and hyphens", s, nil)
					}
					in.a.Bucket = s
				}
			}
			if v, ok := d.Raw("prefix"); ok && v != nil {
				if s, ok := validate.String(v, dl.With("prefix"), validate.StringRule{Max: 256, NoControl: true}, errs); ok {
					in.a.Prefix = strings.Trim(s, "/")
				}
			}
			if v, ok := d.Raw("path_style"); ok && v != nil {
				in.a.PathStyle, _ = validate.Bool(v, dl.With("path_style"), errs)
			}
			if v, ok := d.Require("credential"); ok {
				cl := dl.With("credential")
				c := validate.ReadObject(v, cl, errs)
				if c != nil {
					if v, ok := c.Require("access_key_id"); ok {
						in.a.AccessKeyID, _ = validate.String(v, cl.With("access_key_id"), validate.StringRule{Min: 1, Max: 128, NoControl: true}, errs)
					}
					if v, ok := c.Raw("secret_access_key"); ok && v != nil {
						in.secret, _ = validate.String(v, cl.With("secret_access_key"), validate.StringRule{Min: 1, Max: 256, Secret: true}, errs)
					}
					c.Close()
				}
			}
			d.Close()
		}
	}
	obj.Close()
	out = in
	return &out
}

// sealArchive seals the secret of in for the workspace, or keeps the
// sealed one of old when none is given and the destination is the same
// (its AAD binds endpoint, bucket and access key id); a new destination
// without a secret is refused.
func (s *Server) sealArchive(ws *store.Workspace, in *archiveIn) (*store.Archive, error) {
	a := in.a
	aad := secrets.ArchiveAAD(ws.ID, a.Endpoint, a.Bucket, a.AccessKeyID)
	if in.secret == "" {
		old := ws.Archive
		if old == nil || old.Endpoint != a.Endpoint || old.Bucket != a.Bucket || old.AccessKeyID != a.AccessKeyID {
			return nil, validate.Single(validate.Loc{"body", "archive", "destination", "credential", "secret_access_key"}, "missing",
				"Field required: a new archive destination needs its secret access key", nil, nil)
		}
		a.SecretSealed = old.SecretSealed
		return &a, nil
	}
	sealed, err := s.opts.Keyring.Seal([]byte(in.secret), aad)
	if err != nil {
		return nil, err
	}
	a.SecretSealed = sealed
	return &a, nil
}

// archiveWarning is the warning an update answers when its enabled
// archive's bucket cannot be reached now: the setting is saved (payloads
// are spooled until the bucket answers), but the caller should know.
func (s *Server) archiveWarning(ctx context.Context, p egress.Policy, ws *store.Workspace, a *store.Archive) string {
	if !a.Enabled {
		return ""
	}
	d, err := s.archiveDestination(ws.ID, a, "")
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c := archive.NewClient(d, egress.NewDialer(func() egress.Policy { return p }))
	if err := c.Check(ctx); err != nil {
		return fmt.Sprintf("archive bucket %s could not be reached (%v); the setting is saved and payloads wait on the data planes until it can be", d.Bucket, err)
	}
	return ""
}

// recordArchiveCheck keeps what saving the archive setting learnt of its
// bucket (the warning, if any) for gw status; a setting removed or
// disabled forgets it.
func (s *Server) recordArchiveCheck(ctx context.Context, ws *store.Workspace, warning string) (*store.ArchiveCheck, error) {
	var c *store.ArchiveCheck
	if ws.Archive != nil && ws.Archive.Enabled {
		c = &store.ArchiveCheck{OK: warning == "", Error: warning, CheckedAt: store.Now(), By: "save"}
	}
	return c, s.store.SetArchiveCheck(ctx, ws.ID, c)
}

// archiveCheckOut is the workspace's last archive check, shown only while
// its archive is enabled.
func archiveCheckOut(w *store.Workspace) *wire.ArchiveCheck {
	c := w.ArchiveCheck
	if c == nil || w.Archive == nil || !w.Archive.Enabled {
		return nil
	}
	return &wire.ArchiveCheck{OK: c.OK, Error: c.Error, CheckedAt: c.CheckedAt, By: c.By}
}

// archiveDestination is a stored setting's destination, its secret
// opened (or the one given in the clear).
func (s *Server) archiveDestination(wsID fmt.Stringer, a *store.Archive, secret string) (archive.Destination, error) {
	if secret == "" {
		pt, err := s.opts.Keyring.Open(a.SecretSealed, secrets.ArchiveAAD(wsID, a.Endpoint, a.Bucket, a.AccessKeyID))
		if err != nil {
			return archive.Destination{}, err
		}
		secret = string(pt)
	}
	return archive.Destination{Endpoint: a.Endpoint, Region: a.Region, Bucket: a.Bucket, Prefix: a.Prefix,
		AccessKeyID: a.AccessKeyID, SecretAccessKey: secret, PathStyle: a.PathStyle}, nil
}

// archiveOut is a stored archive setting as the API shows it: never the
// secret.
func archiveOut(a *store.Archive) *wire.WorkspaceArchive {
	if a == nil {
		return nil
	}
	inc := append([]string{}, a.Include...)
	return &wire.WorkspaceArchive{Enabled: a.Enabled, RetentionDays: a.RetentionDays, Include: inc,
		Destination: wire.ArchiveDestination{Kind: "s3", Endpoint: a.Endpoint, Region: a.Region, Bucket: a.Bucket, Prefix: a.Prefix,
			PathStyle: a.PathStyle, Credential: wire.ArchiveCredential{AccessKeyID: a.AccessKeyID}}}
}

// getUsagePayload reads a request's archived payload from its
// workspace's archive: 404 for an event of another organization (or
// workspace), one whose workspace archives nothing, or one not archived
// (yet: the data plane may still hold it); 502 when the store fails.
func (s *Server) getUsagePayload(r *Request) (any, error) {
	id, err := r.pathUUID("usage_event_id")
	if err != nil {
		return nil, err
	}
	e, err := s.store.GetUsageEvent(r.ctx, r.Org.ID, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && r.WS != nil && e.WorkspaceID != r.WS.ID) {
		return nil, errorf(http.StatusNotFound, "usage event %s not found", id)
	}
	if err != nil {
		return nil, err
	}
	ws, err := s.store.GetWorkspace(r.ctx, e.WorkspaceID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && ws.Archive == nil) {
		return nil, errorf(http.StatusNotFound, "usage event %s has no archived payload: its workspace archives nothing", id)
	}
	if err != nil {
		return nil, err
	}
	d, err := s.archiveDestination(ws.ID, ws.Archive, "")
	if err != nil {
		return nil, err
	}
	policy, err := s.egressPolicy(r.ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second)
	defer cancel()
	c := archive.NewClient(d, egress.NewDialer(func() egress.Policy { return policy }))
	gz, err := c.Get(ctx, archive.Key(d.Prefix, e.OrgID, e.WorkspaceID, e.OccurredAt, e.ID))
	if errors.Is(err, archive.ErrNotFound) {
		return nil, errorf(http.StatusNotFound, "usage event %s has no archived payload (yet: data planes upload in the background)", id)
	}
	if err != nil {
		return nil, errorf(http.StatusBadGateway, "the workspace's archive could not be read: %v", err)
	}
	raw, err := archive.Decode(gz)
	if err != nil {
		return nil, errorf(http.StatusBadGateway, "the archived payload of usage event %s does not read: %v", id, err)
	}
	var out wire.UsagePayload
	if err := json.Unmarshal(raw, &out); err != nil || out.UsageEventID != e.ID {
		return nil, errorf(http.StatusBadGateway, "the archived payload of usage event %s is not its own", id)
	}
	return out, nil
}
