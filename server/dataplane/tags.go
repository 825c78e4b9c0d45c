package dataplane

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/tags"
)

// A request's cost-centre tags come from its key and from what its caller
// gives: the X-Gw-Tags header, and LiteLLM's forms, which switchers send
// (issue 35): the x-litellm-tags header and a body's metadata.tags. Each
// given form is held to the workspace's rules (tags.Rules) on its own, so
// a refusal names the header or member at fault; for one tag key given
// twice X-Gw-Tags wins over x-litellm-tags, which wins over metadata.tags,
// and the key's own tags win over all (tags.Merge). The headers are
// admitted before the body is read; metadata.tags once it is (the tags
// stage), before anything else reads the body, and then the merged set is
// held to the bound on tags and the workspace's required tags, and counted
// against the key's new tag sets: the same checks, after the last form is
// known.

// tagsOf is a request's tags from its headers alone (an endpoint whose
// body carries no tags: MCP): headerTags, completed (completeTags).
func tagsOf(r *http.Request, key *inferenceKey) (map[string]string, *response) {
	given, refusal := headerTags(r, key)
	if refusal != nil {
		return nil, refusal
	}
	return completeTags(given, key, true)
}

// headerTags are the tags a request's headers give: X-Gw-Tags over
// x-litellm-tags, each checked as read. A malformed header, or a tag the
// workspace's rules keep from callers (a tag a tag budget governs, a
// value tag_values does not list), is refused before the body is read
// (no usage event: no model was asked for yet).
func headerTags(r *http.Request, key *inferenceKey) (map[string]string, *response) {
	var gw, lite map[string]string
	if vs := r.Header.Values(tags.Header); len(vs) > 0 {
		var err error
		// Repeated header lines are one list (RFC 9110 §5.3).
		if gw, err = tags.ParseHeader(strings.Join(vs, ",")); err != nil {
			return nil, invalidRequest(tags.Header, "invalid_tags", err.Error()+".")
		}
		if refusal := allowedTags(gw, key, tags.Header); refusal != nil {
			return nil, refusal
		}
	}
	if vs := r.Header.Values(tags.LiteLLMHeader); len(vs) > 0 {
		var err error
		if lite, err = tags.ParseList(strings.Split(strings.Join(vs, ","), ","), "x-litellm-tags"); err != nil {
			return nil, invalidRequest("x-litellm-tags", "invalid_tags", err.Error()+".")
		}
		if refusal := allowedTags(lite, key, "x-litellm-tags"); refusal != nil {
			return nil, refusal
		}
	}
	return tags.Merge(gw, lite), nil
}

// allowedTags holds the tags one form gave (named by param) to the
// workspace's rules.
func allowedTags(given map[string]string, key *inferenceKey, param string) *response {
	if r := key.tagRules.Allowed(given, key.tags); r != nil {
		return invalidRequest(param, "tag_not_allowed", param+": "+r.Msg+".")
	}
	return nil
}

// completeTags is the request's set: the given tags with the key's own
// over them, at most tags.MaxPairs, and, when required, every tag key
// the workspace requires.
func completeTags(given map[string]string, key *inferenceKey, required bool) (map[string]string, *response) {
	merged := tags.Merge(key.tags, given)
	if len(merged) > tags.MaxPairs {
		return nil, invalidRequest(tags.Header, "invalid_tags",
			"A request carries at most "+strconv.Itoa(tags.MaxPairs)+" tags, its key's and those it gives ("+
				tags.Header+", x-litellm-tags, metadata.tags) together.")
	}
	if !required {
		return merged, nil
	}
	if missing := tags.Missing(merged, key.required); len(missing) > 0 {
		return nil, invalidRequest(tags.Header, "missing_required_tags",
			"This workspace requires the tags "+strings.Join(missing, ", ")+" on every request; send them as "+
				tags.Header+": "+missing[0]+"=… (the key's own tags count).")
	}
	return merged, nil
}

// bodyTags takes LiteLLM's metadata.tags out of a request body: the tags,
// read as pairs (tags.ParseList) and held to the workspace's rules, and
// the body without them, which every later stage and upstream sees (no
// upstream takes a list in metadata: OpenAI's values are strings,
// Anthropic's metadata is user_id alone). metadata left empty is removed.
// A body without the member is returned as it is, without a second
// parse; a metadata.tags that is a string is OpenAI's own metadata, left
// in place.
func bodyTags(body []byte, key *inferenceKey) (map[string]string, []byte, *response) {
	if !bytes.Contains(body, []byte(`"tags"`)) {
		return nil, body, nil
	}
	members, err := providers.ParseObject(body)
	if err != nil {
		// The dialect's parse says what is wrong with it.
		return nil, body, nil
	}
	meta, ok := members.Get("metadata")
	if !ok {
		return nil, body, nil
	}
	metaMembers, err := providers.ParseObject(meta)
	if err != nil {
		return nil, body, nil
	}
	raw, ok := metaMembers.Get("tags")
	if !ok || bytes.TrimSpace(raw)[0] != '[' {
		return nil, body, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, nil, invalidRequest("metadata.tags", "invalid_tags", "metadata.tags is a list of strings (LiteLLM's tags).")
	}
	given, err := tags.ParseList(list, "metadata.tags")
	if err != nil {
		return nil, nil, invalidRequest("metadata.tags", "invalid_tags", err.Error()+".")
	}
	if refusal := allowedTags(given, key, "metadata.tags"); refusal != nil {
		return nil, nil, refusal
	}
	if len(metaMembers) == 1 {
		return given, providers.WithoutMember(body, "metadata"), nil
	}
	return given, providers.WithMember(body, "metadata", providers.WithoutMember(meta, "tags")), nil
}

// tagsStage reads the body's tags (bodyTags) and admits the request's
// whole set: the headers' (admitted before the body) under them, the
// key's over them, the bound, the required tags, the key's new tag sets.
// A refusal comes before the model is known, like a header's: no usage
// event. A playground request has no tags stage.
func (x *exchange) tagsStage() bool {
	if x.caller != nil {
		// A playground request carries no tags and is held to none
		// (docs/cost-centres.md).
		return true
	}
	fromBody, body, refusal := bodyTags(x.body, x.key)
	if refusal == nil {
		if len(body) != len(x.body) {
			x.hold.count(int64(len(body)))
			x.body = body
		}
		// x.tags holds the headers' tags until here (admitInto).
		x.tags, refusal = completeTags(tags.Merge(x.tags, fromBody), x.key, true)
	}
	if refusal == nil {
		refusal = x.p.tagSets.admit(x.key.id, x.tags, x.p.now())
	}
	if refusal != nil {
		x.d.refuse(x.w, refusal)
		return false
	}
	return true
}
