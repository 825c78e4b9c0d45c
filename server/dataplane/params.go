package dataplane

import (
	"errors"
	"strings"

	"github.com/gw-gateway/gw/server/providers"
)

// dialectParams name, for the dialects gw translates to Chat Completions,
// the member of their own that a Chat Completions parameter of the
// translation came from, so a refusal names what the caller sent: a
// Messages request's thinking, not reasoning_effort.
var dialectParams = map[string]map[string]string{
	endpointMessages: {"reasoning_effort": "thinking", "response_format": "output_format", "max_completion_tokens": "max_tokens",
		"stop": "stop_sequences"},
	endpointResponses: {"reasoning_effort": "reasoning", "response_format": "text.format", "max_tokens": "max_output_tokens",
		"max_completion_tokens": "max_output_tokens"},
}

// ownParam is param as the request's dialect names it.
func (x *exchange) ownParam(param string) string {
	if own, ok := dialectParams[x.d.name()][param]; ok {
		return own
	}
	return param
}

// ownParams renames, in an adapter's refusal of a translated request, the
// parameter it names and the message's mentions of it to the request's
// own member.
func (x *exchange) ownParams(err error) error {
	var inv *providers.InvalidRequestError
	if !errors.As(err, &inv) || inv.Param == "" {
		return err
	}
	own := x.ownParam(inv.Param)
	if own == inv.Param {
		return err
	}
	out := *inv
	out.Message = strings.ReplaceAll(out.Message, inv.Param, own)
	out.Param = own
	return &out
}
