package dataplane

import (
	"net/http"
	"slices"
	"strings"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers"
)

// adapt has the route send the request as its model takes it (the
// model's catalog constraints, issue 35): sampling parameters it refuses
// left out, a forced tool choice it refuses sent as auto, each named in
// x-gw-dropped-params. Every route decides anew, so a fallback to another
// model gets its own adaptation. A strict_parameters policy refuses the
// request instead, naming the first member.
func (x *exchange) adapt(rt *route, strict bool) *response {
	m := rt.model.model
	var a providers.Adaptation
	if rt.native && x.native != nil {
		a = providers.Adapt(x.native.Members, nativeShape(x.d.name()), m)
	} else {
		a = providers.Adapt(x.req.Members, providers.ShapeChat, m)
	}
	if a.Empty() {
		return nil
	}
	params := a.Params()
	for i, p := range params {
		params[i] = x.ownParam(p)
	}
	if strict {
		return invalidRequest(params[0], "unsupported_parameter", "The model '"+m.ID+"' does not accept "+params[0]+
			" ("+refusedWhat(params[0])+"), and a strict_parameters policy applies to this request.")
	}
	if rt.native && x.native != nil {
		base := x.native
		if rt.nativeReq != nil {
			base = rt.nativeReq
		}
		n := *base
		n.Edits = append(slices.Clip(base.Edits), a.Edits()...)
		rt.nativeReq = &n
	} else {
		base := x.req
		if rt.req != nil {
			base = rt.req
		}
		rt.req = base.Adapted(a)
	}
	h := x.w.Header()
	if prev := h.Get("X-Gw-Dropped-Params"); prev != "" {
		params = append([]string{prev}, params...)
	}
	h["X-Gw-Dropped-Params"] = []string{strings.Join(params, ", ")}
	return nil
}

// refusedWhat says what the model refuses of a member adapt names.
func refusedWhat(param string) string {
	if param == "tool_choice" {
		return "it refuses a forced tool choice"
	}
	return "it refuses sampling parameters"
}

// nativeShape is the shape of a request forwarded in the dialect of
// endpoint.
func nativeShape(endpoint string) string {
	switch endpoint {
	case endpointMessages:
		return providers.ShapeMessages
	case endpointResponses:
		return providers.ShapeResponses
	}
	return providers.ShapeChat
}

// vendorHeaders are the caller's vendor headers a route's upstream gets:
// anthropic-beta for Anthropic's API (any dialect: the translation adds
// its own flags beside them) and for a Messages request forwarded to
// Claude on Bedrock or Vertex AI (Bedrock takes them as the body's
// anthropic_beta); openai-beta for OpenAI and Azure OpenAI. Never to
// another vendor, which would not know them, and to whom they would say
// what client the caller runs. They are added to h (made if nil).
func vendorHeaders(r *http.Request, vendor betaVendor, h http.Header) http.Header {
	name := ""
	switch vendor {
	case betaAnthropic:
		name = "Anthropic-Beta"
	case betaOpenAI:
		name = "Openai-Beta"
	}
	if name == "" {
		return h
	}
	if v := r.Header.Values(name); len(v) > 0 {
		if h == nil {
			h = make(http.Header, 1)
		}
		h[name] = v
	}
	return h
}

// betaVendor is whose beta flags an upstream takes.
type betaVendor uint8

const (
	betaNone betaVendor = iota
	betaAnthropic
	betaOpenAI
)

// betaVendorOf is whose beta flags the upstream of rt takes for a
// request of endpoint d.
func betaVendorOf(d string, rt *route) betaVendor {
	switch {
	case rt.model.kind == catalog.KindAnthropic || (rt.native && d == endpointMessages):
		return betaAnthropic
	case rt.model.kind == catalog.KindOpenAI || rt.model.kind == catalog.KindAzureOpenAI:
		return betaOpenAI
	}
	return betaNone
}
