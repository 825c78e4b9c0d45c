package api

import (
	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/wire"
)

func (s *Server) activityRoutes() []*Route {
	pageQ := []QueryParam{
		{Name: "limit", Description: "Page size, 1 to 200 (default 50).", Integer: true},
		{Name: "cursor", Description: "The opaque page.next_cursor of the previous page."},
	}
	return []*Route{
		{Method: "GET", Path: "/api/v1/instance/activity", Tag: "Instance Activity", Summary: "List audit events across the instance, newest first",
			Perms: []auth.Permission{auth.AuditRead}, Result: wire.AuditEvent{}, Paginated: true, Query: pageQ, Handle: s.listActivity},
		{Method: "GET", Path: "/api/v1/organizations/{org_id}/activity", Tag: "Activity", Summary: "List the organization's audit events, newest first",
			Perms: []auth.Permission{auth.AuditRead}, Result: wire.AuditEvent{}, Paginated: true, Query: pageQ, Handle: s.listActivity},
	}
}

func (s *Server) listActivity(r *Request) (any, error) {
	binding := "audit:instance"
	var orgID *uuid.UUID
	if r.Org != nil {
		orgID = &r.Org.ID
		binding = "audit:org:" + r.Org.ID.String()
	}
	pq, err := r.pageQuery(binding)
	if err != nil {
		return nil, err
	}
	events, next, err := s.store.ListAuditEvents(r.ctx, orgID, pq)
	if err != nil {
		return nil, err
	}
	out := make([]wire.AuditEvent, len(events))
	for i := range events {
		out[i] = toAuditEvent(&events[i])
	}
	return page[wire.AuditEvent]{items: out, next: r.nextCursor(binding, next)}, nil
}
