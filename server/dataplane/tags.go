package dataplane

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/gw-gateway/gw/server/tags"
)

// tagsOf is a request's cost-centre tags: its X-Gw-Tags header's with its
// key's own over them, so a caller cannot move its spend to another team
// by naming it. A malformed header, a tag the workspace's rules keep from
// headers (a tag a tag budget governs, a value tag_values does not list),
// more tags than a request may carry, or a tag key the workspace requires
// and neither names is refused before the body is read (no usage event:
// no model was asked for yet).
func tagsOf(r *http.Request, key *inferenceKey) (map[string]string, *response) {
	var header map[string]string
	if vs := r.Header.Values(tags.Header); len(vs) > 0 {
		var err error
		// Repeated header lines are one list (RFC 9110 §5.3).
		if header, err = tags.ParseHeader(strings.Join(vs, ",")); err != nil {
			return nil, invalidRequest(tags.Header, "invalid_tags", err.Error()+".")
		}
	}
	if r := key.tagRules.Allowed(header, key.tags); r != nil {
		return nil, invalidRequest(tags.Header, "tag_not_allowed", tags.Header+": "+r.Msg+".")
	}
	merged := tags.Merge(key.tags, header)
	if len(merged) > tags.MaxPairs {
		return nil, invalidRequest(tags.Header, "invalid_tags",
			"A request carries at most "+strconv.Itoa(tags.MaxPairs)+" tags, its key's and its "+tags.Header+" header's together.")
	}
	if missing := tags.Missing(merged, key.required); len(missing) > 0 {
		return nil, invalidRequest(tags.Header, "missing_required_tags",
			"This workspace requires the tags "+strings.Join(missing, ", ")+" on every request; send them as "+
				tags.Header+": "+missing[0]+"=… (the key's own tags count).")
	}
	return merged, nil
}
