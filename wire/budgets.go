package wire

import (
	"time"

	"github.com/google/uuid"
)

// BudgetLeases is a data plane's request for budget leases (DESIGN §6): for
// each counter, more allowance wanted, what it has spent in the period,
// and all the allowance it has given back. Holder names the data plane's process; a
// restarted process is a new holder, so what an earlier one was granted
// stays counted.
type BudgetLeases struct {
	Holder string           `json:"holder" jsonschema:"minLength=1,maxLength=200"`
	Asks   []BudgetLeaseAsk `json:"asks" jsonschema:"minItems=1,maxItems=1000"`
}

// BudgetLeaseAsk is one counter's part of a lease request. The scope
// members say which usage events already recorded in the period count
// against the counter when the control plane first sees it.
//
// The same mechanism carries rate limits (Kind rate_limit): a counter per
// inference key, dimension and minute (period minute), whose amounts are
// requests or tokens instead of nano-dollars, and which has no seed.
type BudgetLeaseAsk struct {
	Kind           string      `json:"kind,omitempty" jsonschema:"enum=budget,enum=rate_limit"`
	Counter        string      `json:"counter" jsonschema:"minLength=1,maxLength=200"`
	OrgID          uuid.UUID   `json:"org_id"`
	WorkspaceID    uuid.UUID   `json:"workspace_id"`
	PolicyID       uuid.UUID   `json:"policy_id"`
	PolicyName     string      `json:"policy_name"`
	Period         string      `json:"period" jsonschema:"enum=day,enum=month,enum=minute"`
	InferenceKeyID *uuid.UUID  `json:"inference_key_id,omitempty"`
	PeriodStart    time.Time   `json:"period_start"`
	LimitNanoUSD   int64       `json:"limit_nano_usd" jsonschema:"minimum=0"`
	OwnerIDs       []uuid.UUID `json:"owner_ids,omitempty"`
	KeyIDs         []uuid.UUID `json:"key_ids,omitempty"`
	Models         []string    `json:"models,omitempty"`
	WantNanoUSD    int64       `json:"want_nano_usd" jsonschema:"minimum=0"`
	UsedNanoUSD    int64       `json:"used_nano_usd" jsonschema:"minimum=0"`
	// ReturnedNanoUSD is all the holder has given back of the counter in
	// the period: cumulative, so an ask received twice gives back once.
	ReturnedNanoUSD int64 `json:"returned_nano_usd" jsonschema:"minimum=0"`
}

// BudgetLeaseGrant is the holder's lease of one counter after the request:
// all it was granted in the period, and the spend it is known to have.
type BudgetLeaseGrant struct {
	Counter        string    `json:"counter"`
	PeriodStart    time.Time `json:"period_start"`
	GrantedNanoUSD int64     `json:"granted_nano_usd"`
	UsedNanoUSD    int64     `json:"used_nano_usd"`
	// ReturnedNanoUSD is what the control plane has taken back in all.
	ReturnedNanoUSD int64 `json:"returned_nano_usd"`
	// OthersNanoUSD is what the seed and every other holder have of the
	// counter (each lease counting the larger of its grant and its
	// spend): the limit less this is the most the holder could still get.
	OthersNanoUSD int64 `json:"others_nano_usd"`
}

// BudgetLeaseResult answers BudgetLeases, one grant per ask.
type BudgetLeaseResult struct {
	Grants []BudgetLeaseGrant `json:"grants"`
}

// BudgetState is one budget counter as the control plane sees it: spent
// (usage recorded before the counter existed plus what data planes
// reported), reserved (granted to data planes and not yet reported spent)
// and what remains to grant.
type BudgetState struct {
	PolicyID       uuid.UUID  `json:"policy_id"`
	PolicyName     string     `json:"policy_name"`
	Counter        string     `json:"counter"`
	Period         string     `json:"period"`
	Aggregation    string     `json:"aggregation"`
	InferenceKeyID *uuid.UUID `json:"inference_key_id" jsonschema:"nullable"`
	AmountUSD      string     `json:"amount_usd"`
	SpentUSD       string     `json:"spent_usd"`
	ReservedUSD    string     `json:"reserved_usd"`
	RemainingUSD   string     `json:"remaining_usd"`
	PeriodStart    time.Time  `json:"period_start"`
	PeriodEnd      time.Time  `json:"period_end"`
}

// Lease kinds (BudgetLeaseAsk.Kind); empty is a budget.
const (
	LeaseBudget    = "budget"
	LeaseRateLimit = "rate_limit"
)
