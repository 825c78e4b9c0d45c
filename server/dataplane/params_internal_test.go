package dataplane

import (
	"errors"
	"testing"

	"github.com/gw-gateway/gw/server/providers"
)

// An adapter's refusal of a translated request names the request's own
// member, in its param and its message.
func TestOwnParams(t *testing.T) {
	inv := &providers.InvalidRequestError{Param: "reasoning_effort", Code: "unsupported_parameter",
		Message: "reasoning_effort is supported for Anthropic models on Bedrock."}
	for _, c := range []struct {
		d           dialect
		param, lead string
	}{
		{messagesDialect{}, "thinking", "thinking is supported"},
		{responsesDialect{}, "reasoning", "reasoning is supported"},
		{chatDialect{}, "reasoning_effort", "reasoning_effort is supported"},
	} {
		x := &exchange{d: c.d}
		var got *providers.InvalidRequestError
		if !errors.As(x.ownParams(inv), &got) || got.Param != c.param || got.Message[:len(c.lead)] != c.lead || got.Code != inv.Code {
			t.Errorf("%s: %+v", c.d.name(), got)
		}
	}
	if inv.Param != "reasoning_effort" {
		t.Fatal("the adapter's error was changed in place")
	}
}
