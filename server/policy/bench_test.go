package policy

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
)

// benchPolicies builds 20 enabled policies that all apply to request(), each
// with a realistic mix of rules, half of them matching.
func benchPolicies() []Policy {
	models := make([]string, 50)
	for i := range models {
		models[i] = fmt.Sprintf("vendor/model-%02d", i)
	}
	models = append(models, "openai/gpt-4o")
	policies := make([]Policy, 20)
	for i := range policies {
		target := Target{Kind: TargetWorkspace}
		switch i % 3 {
		case 1:
			target = Target{Kind: TargetSelectedKeys, KeyIDs: []string{"key-0", "key-1", "key-2"}}
		case 2:
			target = Target{Kind: TargetSelectedUsers, UserIDs: []uuid.UUID{stranger, owner}}
		}
		policies[i] = Policy{
			ID:      uuid.UUID{15: byte(i + 1)},
			Name:    fmt.Sprintf("policy-%02d", i),
			Enabled: true,
			Definition: Definition{Target: target, Rules: []Rule{
				always(allow(models...)),
				always(providers("openai", "anthropic")),
				always(priceLimit("5", "20")),
				when(onStream(true), deny("no streaming")),
				when(onCapabilities(CapabilityReasoning), deny("no reasoning")),
				always(tokens(int64(1000 + i))),
				always(scopes(ScopeOrg, ScopeWorkspace)),
				always(budget("100", PeriodMonth, AggregationShared)),
				always(fallback("anthropic/claude")),
				when(onModels("openai/gpt-4o"), strict()),
			}},
		}
	}
	return policies
}

func BenchmarkEvaluate(b *testing.B) {
	policies := benchPolicies()
	for _, phase := range []Phase{PhaseInference, PhaseDiscovery} {
		b.Run(string(phase), func(b *testing.B) {
			req := request()
			req.Phase = phase
			if d := Evaluate(policies, req); !d.Allowed {
				b.Fatalf("benchmark request denied: %s", d.DenyMessage)
			}
			b.ReportAllocs()
			for b.Loop() {
				Evaluate(policies, req)
			}
		})
	}
}
