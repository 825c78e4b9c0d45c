package store

import (
	"strconv"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/wire"
)

// The JSON an event's attempts and provenance are stored as, written by
// hand: byte for byte what json.Marshal writes (TestUsageJSONIsMarshals,
// FuzzUsageJSONString), without its reflection, which was most of what
// the loader spent per event outside the database. TestUsageJSONCoversTheTypes
// fails when a wire type gains a member these do not write.

// appendAttemptsJSON is json.Marshal of a non-nil attempts list.
func appendAttemptsJSON(b []byte, as []wire.UsageAttempt) []byte {
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

// appendProvenanceJSON is json.Marshal of a non-nil provenance.
func appendProvenanceJSON(b []byte, p *wire.UsageProvenance) []byte {
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

func appendJSONUUID(b []byte, id uuid.UUID) []byte {
	b = append(b, '"')
	b = append(b, id.String()...)
	return append(b, '"')
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
