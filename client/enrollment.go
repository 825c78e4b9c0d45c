package client

import (
	"context"

	"github.com/gw-gateway/gw/wire"
)

// RequestEnrollment is a data plane asking to be enrolled with its public
// key (pending until an instance admin approves it).
func (c *Client) RequestEnrollment(ctx context.Context, req wire.DataPlaneEnrollmentRequest) (wire.DataPlaneEnrollment, error) {
	return getData[wire.DataPlaneEnrollment](ctx, c, "POST", "/api/v1/data-plane/enrollments", nil, req)
}

// ListEnrollments lists every data plane's enrollment.
func (c *Client) ListEnrollments(ctx context.Context) ([]wire.DataPlaneEnrollment, error) {
	return getData[[]wire.DataPlaneEnrollment](ctx, c, "GET", "/api/v1/instance/data-planes/enrollments", nil, nil)
}

// GetEnrollment reads one data plane's enrollment.
func (c *Client) GetEnrollment(ctx context.Context, id string) (wire.DataPlaneEnrollment, error) {
	return getData[wire.DataPlaneEnrollment](ctx, c, "GET", "/api/v1/instance/data-planes/enrollments/"+esc(id), nil, nil)
}

// ApproveEnrollment enrolls a data plane for exactly these organizations.
func (c *Client) ApproveEnrollment(ctx context.Context, id string, req wire.DataPlaneEnrollmentApprove) (wire.DataPlaneEnrollment, error) {
	return getData[wire.DataPlaneEnrollment](ctx, c, "POST", "/api/v1/instance/data-planes/enrollments/"+esc(id)+"/approve", nil, req)
}

// RevokeEnrollment stops a data plane's bundles.
func (c *Client) RevokeEnrollment(ctx context.Context, id string) (wire.DataPlaneEnrollment, error) {
	return getData[wire.DataPlaneEnrollment](ctx, c, "POST", "/api/v1/instance/data-planes/enrollments/"+esc(id)+"/revoke", nil, nil)
}
