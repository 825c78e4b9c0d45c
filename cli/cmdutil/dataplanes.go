package cmdutil

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// How a data plane is shown, by gw data-planes and by gw status.

// DataPlaneView is a data plane as gw data-planes shows it: the heartbeat's
// record and whether its bundles are the latest (nil: not known).
type DataPlaneView struct {
	wire.DataPlaneInstance
	Current *bool `json:"current"`
	// Behind lists the organizations whose latest bundle it has not
	// admitted.
	Behind []string `json:"behind,omitempty"`
}

// DataPlaneViews lists the data planes and compares their bundles with
// the latest ones; latest is nil when they could not be read.
func DataPlaneViews(ctx context.Context, c *client.Client) ([]DataPlaneView, map[string]int64, error) {
	list, err := c.ListDataPlanes(ctx)
	if err != nil {
		return nil, nil, err
	}
	latest := map[string]int64{}
	out := make([]DataPlaneView, len(list))
	for i, d := range list {
		out[i] = DataPlaneView{DataPlaneInstance: d}
		for org, v := range d.LatestBundleVersions {
			latest[org] = max(latest[org], v)
			if d.BundleVersions[org] < v {
				out[i].Behind = append(out[i].Behind, org)
			}
		}
		sort.Strings(out[i].Behind)
		// A data plane that is not enrolled serves nothing (503): it is
		// not current, however few bundles it lacks.
		current := len(out[i].Behind) == 0 && d.Enrollment == "approved"
		out[i].Current = &current
	}
	return out, latest, nil
}

// DataPlaneStatus says whether a data plane serves. The API's status is
// its heartbeat alone (healthy, or stale after a minute without one); a
// data plane that is not enrolled serves nothing however alive it is, so
// its enrollment comes first: pending, revoked or not enrolled, then stale
// if it is (issue 26, row 12).
func DataPlaneStatus(v DataPlaneView) string {
	var parts []string
	switch v.Enrollment {
	case "approved":
	case "pending", "revoked":
		parts = append(parts, v.Enrollment)
	default:
		parts = append(parts, "not enrolled")
	}
	if v.Status != "healthy" {
		parts = append(parts, v.Status)
	}
	if len(parts) == 0 {
		return v.Status
	}
	return strings.Join(parts, ", ")
}

// EnrollmentText says what an enrollment that is not approved means for
// the data plane: it answers 503 until an instance admin enrolls it.
func EnrollmentText(e string) string {
	switch e {
	case "pending":
		return "pending (serves nothing: gw data-planes enroll)"
	case "none", "":
		return "none (serves nothing)"
	case "revoked":
		return "revoked (serves nothing)"
	}
	return e
}

func CurrentText(c *bool) string {
	switch {
	case c == nil:
		return "unknown"
	case *c:
		return "yes"
	}
	return "no"
}

// Since says how long ago t was, to the second.
func Since(t time.Time) string {
	return time.Since(t).Round(time.Second).String() + " ago"
}
