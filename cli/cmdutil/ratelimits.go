package cmdutil

import (
	"errors"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/wire"
)

// RateLimitChange is what --rpm, --tpm and --no-rate-limits asked for. A
// nil member was not mentioned and stays as it is; 0 removes that limit.
type RateLimitChange struct {
	RPM, TPM *int64
}

// Empty reports whether no rate-limit flag was given.
func (c RateLimitChange) Empty() bool { return c.RPM == nil && c.TPM == nil }

// Apply returns cur with the change made. The result is never nil, so an
// update sends both members: the API reads a null member as "no limit".
func (c RateLimitChange) Apply(cur *wire.RateLimits) *wire.RateLimits {
	out := &wire.RateLimits{}
	if cur != nil {
		*out = *cur
	}
	set := func(dst **int64, n *int64) {
		switch {
		case n == nil:
		case *n == 0:
			*dst = nil
		default:
			*dst = n
		}
	}
	set(&out.RequestsPerMinute, c.RPM)
	set(&out.TokensPerMinute, c.TPM)
	return out
}

// RateLimitFlags are a command's --rpm, --tpm and --no-rate-limits.
type RateLimitFlags struct {
	rpm, tpm int64
	none     bool
}

func (r *RateLimitFlags) Add(cmd *cobra.Command) {
	cmd.Flags().Int64Var(&r.rpm, "rpm", 0, "requests per minute (0: no limit of its own)")
	cmd.Flags().Int64Var(&r.tpm, "tpm", 0, "tokens per minute, input plus output (0: no limit of its own)")
	cmd.Flags().BoolVar(&r.none, "no-rate-limits", false, "remove both rate limits")
}

// Read returns what was given; a negative limit is a usage error (the
// server would refuse it too, but the flag's own name says more).
func (r *RateLimitFlags) Read(cmd *cobra.Command) (RateLimitChange, error) {
	var c RateLimitChange
	if r.none && (cmd.Flags().Changed("rpm") || cmd.Flags().Changed("tpm")) {
		return c, UsageError{Err: errors.New("--no-rate-limits cannot be combined with --rpm or --tpm")}
	}
	if r.none {
		zero := int64(0)
		return RateLimitChange{RPM: &zero, TPM: &zero}, nil
	}
	for _, f := range []struct {
		name string
		v    *int64
		dst  **int64
	}{{"rpm", &r.rpm, &c.RPM}, {"tpm", &r.tpm, &c.TPM}} {
		if !cmd.Flags().Changed(f.name) {
			continue
		}
		if *f.v < 0 {
			return c, UsageError{Err: errors.New("--" + f.name + " must be a positive number, or 0 for no limit")}
		}
		*f.dst = f.v
	}
	return c, nil
}

// RateLimitsCell shows limits in a table: "60 rpm, 100000 tpm", or "-".
func RateLimitsCell(l *wire.RateLimits) string {
	if l == nil {
		return "-"
	}
	var s string
	if l.RequestsPerMinute != nil {
		s = strconv.FormatInt(*l.RequestsPerMinute, 10) + " rpm"
	}
	if l.TokensPerMinute != nil {
		if s != "" {
			s += ", "
		}
		s += strconv.FormatInt(*l.TokensPerMinute, 10) + " tpm"
	}
	return OrDash(s)
}
