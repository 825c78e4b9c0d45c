package dataplane

import (
	"time"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/wire"
)

// UsageSink receives one usage event per chat completion (DESIGN §7).
// Record runs on the request path, after the answer is written, and must
// not block: a sink buffers and ships in the background.
type UsageSink interface {
	Record(wire.UsageEventIn)
}

// Usage event statuses (wire.UsageEvent.Status).
const (
	statusOK = "ok"
	// statusError: the upstream failed, or the caller left mid-answer.
	statusError = "error"
	// statusDenied: gw refused the request for a model the key may see
	// (a policy, strict parameters, a missing capability or modality).
	statusDenied = "denied"
)

// record hands the request's usage event to the sink. The cost is the
// tokens priced at the catalog's prices for the model that answered,
// exactly (catalog.Pricing.CostNanoUSD).
func (x *exchange) record(m *routeModel, cred *upstreamCredential, u providers.Usage, status string) {
	nano, err := m.pricing.CostNanoUSD(u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens)
	if err != nil {
		// Prices are validated when a catalog is imported and counts are
		// never negative, so this is a bug; the tokens still count.
		x.p.inference.log.Error("pricing a request", "request_id", x.id, "model", m.model.ID, "error", err)
		nano = 0
	}
	key := x.key
	e := wire.UsageEventIn{
		ID: x.id, OrgID: key.org.orgID, WorkspaceID: key.workspace, InferenceKeyID: &key.id, OwnerID: &key.owner,
		Model: m.model.ID, Provider: m.model.Provider,
		InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens,
		CostUSD: catalog.FormatNanoUSD(nano), Status: status,
		LatencyMS: time.Since(x.started).Milliseconds(), OccurredAt: x.occurred,
	}
	if cred != nil {
		e.ProviderCredentialID = &cred.id
	}
	x.p.inference.usage.Record(e)
	x.spendTokens(u)
}
