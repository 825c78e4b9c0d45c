package wire

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Usage events' JSON written by hand: byte for byte what json.Marshal
// writes (TestUsageJSONIsMarshals, FuzzUsageEventInJSON,
// FuzzUsageJSONString), without its reflection. The store keeps an
// event's attempts and provenance as this JSON (it was most of what the
// loader spent per event outside the database), and a remote data plane's
// spool writes each event as a line of it (its json.Encoder was most of
// what recording an event cost). TestUsageJSONCoversTheTypes fails when
// a type gains a member these do not write.

// AppendUsageAttemptsJSON appends json.Marshal of a non-nil attempts list.
func AppendUsageAttemptsJSON(b []byte, as []UsageAttempt) []byte {
	b = append(b, '[')
	for i := range as {
		a := &as[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"model":`...)
		b = appendJSONString(b, a.Model)
		b = append(b, `,"provider":`...)
		b = appendJSONString(b, a.Provider)
		b = append(b, `,"failure":`...)
		if a.Failure == nil {
			b = append(b, "null"...)
		} else {
			b = appendJSONString(b, *a.Failure)
		}
		b = append(b, `,"latency_ms":`...)
		b = strconv.AppendInt(b, a.LatencyMS, 10)
		b = append(b, '}')
	}
	return append(b, ']')
}

// AppendUsageProvenanceJSON appends json.Marshal of a non-nil provenance.
func AppendUsageProvenanceJSON(b []byte, p *UsageProvenance) []byte {
	b = append(b, `{"prices":`...)
	if pr := p.Prices; pr == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"input_per_mtok":`...)
		b = appendJSONString(b, pr.InputPerMTok)
		b = append(b, `,"output_per_mtok":`...)
		b = appendJSONString(b, pr.OutputPerMTok)
		b = append(b, `,"cache_read_per_mtok":`...)
		b = appendJSONString(b, pr.CacheReadPerMTok)
		b = append(b, `,"cache_write_per_mtok":`...)
		b = appendJSONString(b, pr.CacheWritePerMTok)
		b = append(b, `,"cache_write_1h_per_mtok":`...)
		b = appendJSONString(b, pr.CacheWrite1hPerMTok)
		b = append(b, `,"long_context":`...)
		b = strconv.AppendBool(b, pr.LongContext)
		if pr.ServiceTier != "" {
			b = append(b, `,"service_tier":`...)
			b = appendJSONString(b, pr.ServiceTier)
		}
		if pr.PriceClass != "" {
			b = append(b, `,"price_class":`...)
			b = appendJSONString(b, pr.PriceClass)
		}
		b = append(b, '}')
	}
	b = append(b, `,"bundle_version":`...)
	b = strconv.AppendInt(b, p.BundleVersion, 10)
	b = append(b, `,"policies":`...)
	if p.Policies == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range p.Policies {
			r := &p.Policies[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"policy_id":`...)
			b = appendJSONUUID(b, r.PolicyID)
			b = append(b, `,"policy_name":`...)
			b = appendJSONString(b, r.PolicyName)
			b = append(b, `,"rule_index":`...)
			b = strconv.AppendInt(b, int64(r.RuleIndex), 10)
			b = append(b, `,"action":`...)
			b = appendJSONString(b, r.Action)
			b = append(b, `,"effect":`...)
			b = appendJSONString(b, r.Effect)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"budgets":`...)
	if p.Budgets == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range p.Budgets {
			d := &p.Budgets[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"policy_id":`...)
			b = appendJSONUUID(b, d.PolicyID)
			b = append(b, `,"policy_name":`...)
			b = appendJSONString(b, d.PolicyName)
			b = append(b, `,"counter":`...)
			b = appendJSONString(b, d.Counter)
			b = append(b, `,"period":`...)
			b = appendJSONString(b, d.Period)
			b = append(b, `,"aggregation":`...)
			b = appendJSONString(b, d.Aggregation)
			b = append(b, `,"amount_usd":`...)
			b = appendJSONString(b, d.AmountUSD)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if p.OverBound {
		b = append(b, `,"over_bound":true`...)
	}
	if u := p.UpstreamUsage; u != nil {
		b = append(b, `,"upstream_usage":{"input_tokens":`...)
		b = strconv.AppendInt(b, u.InputTokens, 10)
		b = append(b, `,"output_tokens":`...)
		b = strconv.AppendInt(b, u.OutputTokens, 10)
		b = append(b, `,"cache_read_tokens":`...)
		b = strconv.AppendInt(b, u.CacheReadTokens, 10)
		b = append(b, `,"cache_write_tokens":`...)
		b = strconv.AppendInt(b, u.CacheWriteTokens, 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendJSONUUID appends id as its quoted text, as uuid.UUID's
// MarshalText writes it, without allocating it.
func appendJSONUUID(b []byte, id uuid.UUID) []byte {
	return append(AppendUUID(append(b, '"'), id), '"')
}

// AppendUUID appends id's text, as uuid.UUID's String writes it, without
// allocating it.
func AppendUUID(b []byte, id uuid.UUID) []byte {
	for i, c := range id {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hexDigits[c>>4], hexDigits[c&0xf])
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendJSONString is s as encoding/json writes a string: quoted, with
// ", \ and control characters escaped, <, > and & as \u escapes (HTML-safe),
// invalid UTF-8 as \ufffd, and U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendUsageEventInJSON appends json.Marshal of e. The rare event whose
// JSON it does not write itself (an MCP tool call's arguments, which
// json.Marshal compacts and escapes; a time RFC 3339 cannot hold) is
// appended as json.Marshal writes it, or refused as json.Marshal refuses it.
func AppendUsageEventInJSON(b []byte, e *UsageEventIn) ([]byte, error) {
	return appendUsageEventInJSON(b, e, nil)
}

// appendUsageEventInJSON is AppendUsageEventInJSON, the provenance
// written through pc when there is one (ProvenanceCache).
func appendUsageEventInJSON(b []byte, e *UsageEventIn, pc *ProvenanceCache) ([]byte, error) {
	if y := e.OccurredAt.Year(); e.ToolArguments != nil || y < 0 || y > 9999 || offsetSeconds(e.OccurredAt)%60 != 0 {
		raw, err := json.Marshal(e)
		return append(b, raw...), err
	}
	b = append(b, `{"id":`...)
	b = appendJSONUUID(b, e.ID)
	b = append(b, `,"org_id":`...)
	b = appendJSONUUID(b, e.OrgID)
	b = append(b, `,"workspace_id":`...)
	b = appendJSONUUID(b, e.WorkspaceID)
	b = appendOptUUID(b, `,"inference_key_id":`, e.InferenceKeyID)
	b = appendOptUUID(b, `,"management_key_id":`, e.ManagementKeyID)
	b = appendOptUUID(b, `,"owner_id":`, e.OwnerID)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, e.Model)
	b = append(b, `,"provider":`...)
	b = appendJSONString(b, e.Provider)
	b = appendOptUUID(b, `,"provider_credential_id":`, e.ProviderCredentialID)
	b = append(b, `,"input_tokens":`...)
	b = strconv.AppendInt(b, e.InputTokens, 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, e.OutputTokens, 10)
	b = append(b, `,"cache_read_tokens":`...)
	b = strconv.AppendInt(b, e.CacheReadTokens, 10)
	b = append(b, `,"cache_write_tokens":`...)
	b = strconv.AppendInt(b, e.CacheWriteTokens, 10)
	b = append(b, `,"cost_usd":`...)
	b = appendJSONString(b, e.CostUSD)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, e.Status)
	b = append(b, `,"latency_ms":`...)
	b = strconv.AppendInt(b, e.LatencyMS, 10)
	b = append(b, `,"occurred_at":"`...)
	b = e.OccurredAt.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	b = appendOptString(b, `,"request_id":`, e.RequestID)
	b = appendOptString(b, `,"endpoint":`, e.Endpoint)
	b = appendOptString(b, `,"reason":`, e.Reason)
	if e.RequestedModel != "" {
		b = append(b, `,"requested_model":`...)
		b = appendJSONString(b, e.RequestedModel)
	}
	if len(e.Attempts) > 0 {
		b = append(b, `,"attempts":`...)
		b = AppendUsageAttemptsJSON(b, e.Attempts)
	}
	if e.UsageSource != "" {
		b = append(b, `,"usage_source":`...)
		b = appendJSONString(b, e.UsageSource)
	}
	b = appendOptInt(b, `,"reasoning_tokens":`, e.ReasoningTokens)
	b = appendOptInt(b, `,"cache_write_1h_tokens":`, e.CacheWrite1hTokens)
	if e.Provenance != nil {
		b = append(b, `,"provenance":`...)
		if pc != nil {
			b = pc.append(b, e.Provenance)
		} else {
			b = AppendUsageProvenanceJSON(b, e.Provenance)
		}
	}
	b = appendOptString(b, `,"service_tier":`, e.ServiceTier)
	b = appendOptString(b, `,"batch_id":`, e.BatchID)
	if len(e.Tags) > 0 {
		// Sorted, as json.Marshal writes a map.
		keys := make([]string, 0, len(e.Tags))
		for k := range e.Tags {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, `,"tags":{`...)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSONString(b, e.Tags[k])
		}
		b = append(b, '}')
	}
	if len(e.Guardrails) > 0 {
		b = append(b, `,"guardrails":[`...)
		for i := range e.Guardrails {
			g := &e.Guardrails[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = appendJSONString(b, g.ID)
			b = append(b, `,"name":`...)
			b = appendJSONString(b, g.Name)
			b = append(b, `,"stage":`...)
			b = appendJSONString(b, g.Stage)
			b = append(b, `,"outcome":`...)
			b = appendJSONString(b, g.Outcome)
			b = append(b, `,"detectors":`...)
			if g.Detectors == nil {
				b = append(b, "null"...)
			} else {
				b = append(b, '[')
				for j, d := range g.Detectors {
					if j > 0 {
						b = append(b, ',')
					}
					b = appendJSONString(b, d)
				}
				b = append(b, ']')
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = appendOptInt(b, `,"tool_arguments_bytes":`, e.ToolArgumentsBytes)
	b = appendOptString(b, `,"cache_saving_usd":`, e.CacheSavingUSD)
	return append(b, '}'), nil
}

func offsetSeconds(t time.Time) int {
	_, off := t.Zone()
	return off
}

func appendOptUUID(b []byte, member string, id *uuid.UUID) []byte {
	if id == nil {
		return b
	}
	return appendJSONUUID(append(b, member...), *id)
}

func appendOptString(b []byte, member string, s *string) []byte {
	if s == nil {
		return b
	}
	return appendJSONString(append(b, member...), *s)
}

func appendOptInt(b []byte, member string, n int64) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendInt(append(b, member...), n, 10)
}
