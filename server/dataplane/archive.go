package dataplane

import (
	"context"
	"slices"

	"github.com/gw-gateway/gw/server/egress"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/archive"
	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/secrets"
)

// The payload archive (issue 32): a request of a workspace that archives
// has its body (as the guardrails left it, redactions applied) and its
// answer (as the caller got it) handed to the plane's archive writer once
// its handler is done (admission.end), with its usage event id; the
// writer spools and uploads in the background, so the archive being down
// never fails or slows a request.

// maxArchivedAnswer bounds what of an answer is kept for the archive; a
// longer answer is archived cut, and the object says so.
const maxArchivedAnswer = 8 << 20

// archiveTap is what a request keeps for its archive object.
type archiveTap struct {
	include  *bundle.Archive
	request  []byte
	response []byte
	cut      bool
}

// Write keeps what the answer writes, up to maxArchivedAnswer.
func (t *archiveTap) Write(b []byte) {
	room := maxArchivedAnswer - len(t.response)
	if len(b) > room {
		b, t.cut = b[:max(room, 0)], true
	}
	t.response = append(t.response, b...)
}

// startArchive taps the request's answer when its workspace archives
// answers (admitRequest, once the key is known).
func (a *admission) startArchive() {
	if a.p.archive == nil || a.key == nil || a.key.org == nil {
		return
	}
	ar := a.key.org.archives[a.key.workspace]
	if ar == nil {
		return
	}
	a.archive = &archiveTap{include: ar}
	if slices.Contains(ar.Include, archive.IncludeResponse) {
		a.mw.tap = a.archive
	}
}

// archiveRequest keeps the request body as it goes upstream (after the
// input guardrails' redactions).
func (a *admission) archiveRequest(body []byte) {
	if t := a.archive; t != nil && slices.Contains(t.include.Include, archive.IncludeRequest) {
		t.request = body
	}
}

// submitArchive hands the finished request's payload to the writer: once
// per request (admission.end), and only for a request that recorded a
// usage event (its id names the object).
func (a *admission) submitArchive() {
	t := a.archive
	if t == nil || !a.finished || a.p.archive == nil {
		return
	}
	a.archive = nil
	p := &archive.Payload{UsageEventID: a.id, RequestID: a.requestID, OrgID: a.key.org.orgID, WorkspaceID: a.key.workspace,
		Endpoint: a.endpoint, OccurredAt: a.occurred, Request: archive.Body(t.request), Response: archive.Body(t.response),
		ResponseCut: t.cut}
	a.p.archive.Submit(p)
}

// archiveDestination is the writer's Resolve: a workspace's destination
// as the bundle in force has it, its secret opened.
func (p *Plane) archiveDestination(org, workspace uuid.UUID) (*archive.Destination, bool) {
	ad := p.state.Load().orgs[org]
	if ad == nil || ad.playground == nil || ad.playground.routes == nil || p.inference.keyring == nil {
		return nil, false
	}
	a := ad.playground.routes.archives[workspace]
	if a == nil {
		return nil, true
	}
	secret, err := p.inference.keyring.Open(a.SecretSealed, secrets.ArchiveAAD(workspace, a.Endpoint, a.Bucket, a.AccessKeyID))
	if err != nil {
		p.inference.log.Error("archive: the workspace's secret access key does not open", "workspace_id", workspace, "error", err)
		return nil, false
	}
	return &archive.Destination{Endpoint: a.Endpoint, Region: a.Region, Bucket: a.Bucket, Prefix: a.Prefix,
		AccessKeyID: a.AccessKeyID, SecretAccessKey: string(secret), PathStyle: a.PathStyle}, true
}

// startArchiveWriter opens the plane's archive writer on dir and runs it
// until the plane's base context ends (what is queued then is spooled).
func (p *Plane) startArchiveWriter(dir string) error {
	w, err := archive.NewWriter(archive.Options{Dir: dir, Log: p.inference.log, Resolve: p.archiveDestination,
		Dial: newArchiveDialer(p.egressPolicy)})
	if err != nil {
		return err
	}
	if m := p.inference.metrics; m != nil {
		for _, c := range w.Collectors() {
			_ = m.Registry().Register(c)
		}
	}
	p.archive = w
	p.archiveDone = make(chan struct{})
	ctx, stop := context.WithCancel(context.Background())
	p.archiveStop = stop
	go func() {
		defer close(p.archiveDone)
		w.Run(ctx)
	}()
	return nil
}

// CloseArchive stops the archive writer once the requests have ended (at
// shutdown): what it holds in memory is spooled, to be uploaded by the
// next process; it waits for that, or for ctx.
func (p *Plane) CloseArchive(ctx context.Context) {
	if p.archiveDone == nil {
		return
	}
	p.archiveStop()
	select {
	case <-p.archiveDone:
	case <-ctx.Done():
	}
}

// newArchiveDialer dials the archive's store under the plane's egress
// policy, as upstream connections are.
func newArchiveDialer(policy func() egress.Policy) *egress.Dialer {
	return egress.NewDialer(policy)
}
