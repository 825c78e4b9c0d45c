package wire

import (
	"time"

	"github.com/google/uuid"
)

// BudgetLeases is a data plane's request for budget leases (DESIGN §6): for
// each counter, more allowance wanted, what it has spent in the period,
// and all the allowance it has given back.
//
// DataPlaneID is the enrolled data plane asking, as its bundle polls name
// it: the control plane serves it only counters of the organizations it is
// enrolled for. Holder names whose lease it is: the data plane id itself,
// or the id and a suffix after '#' ("dp-1#3f9c…"), so one data plane's
// processes never touch another data plane's leases. A data plane that
// keeps its ledger's journal across restarts keeps its holder and takes
// its own leases back; one that starts without it takes a new suffix.
type BudgetLeases struct {
	DataPlaneID string           `json:"data_plane_id" jsonschema:"minLength=1,maxLength=100"`
	Holder      string           `json:"holder" jsonschema:"minLength=1,maxLength=200"`
	Asks        []BudgetLeaseAsk `json:"asks" jsonschema:"minItems=1,maxItems=1000"`
}

// BudgetLeaseAsk is one counter's part of a lease request. The counter's
// name says everything else: the control plane reads the amount, the
// organization and the scope its seed counts over from its own policies
// and keys, never from the request.
//
// Budget counters are <policy id>/<day|month>/shared and <policy
// id>/<day|month>/per_key/<inference key id>. The same mechanism carries
// rate limits: rl/<inference key id>/<requests|tokens>, period a minute,
// amounts in requests or tokens instead of nano-dollars, no seed.
type BudgetLeaseAsk struct {
	Counter     string    `json:"counter" jsonschema:"minLength=1,maxLength=200"`
	PeriodStart time.Time `json:"period_start"`
	WantNanoUSD int64     `json:"want_nano_usd" jsonschema:"minimum=0"`
	// NeedNanoUSD is the least worth granting (the request's shortfall):
	// when the control plane has less free, it grants nothing, and the
	// piece stays for a holder it is enough for. 0: any amount.
	NeedNanoUSD int64 `json:"need_nano_usd,omitempty" jsonschema:"minimum=0"`
	UsedNanoUSD int64 `json:"used_nano_usd" jsonschema:"minimum=0"`
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
	// LimitNanoUSD is the counter's amount, from the control plane's own
	// policy (or the key's rate limit).
	LimitNanoUSD int64 `json:"limit_nano_usd"`
	// OthersNanoUSD is what the seed and every other holder have of the
	// counter (each lease counting the larger of its grant and its
	// spend): the limit less this is the most the holder could still get.
	OthersNanoUSD int64 `json:"others_nano_usd"`
	// OthersUsedNanoUSD is what of that is spent (the seed and the other
	// holders' reported spend): the limit less this and the holder's own
	// spend is room that may still come back to it.
	OthersUsedNanoUSD int64 `json:"others_used_nano_usd"`
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
	// PlaygroundUserID is set on a per_key row that counts one user's
	// Workspace Playground requests, which run without an inference key:
	// inference_key_id is then the id they are counted under, derived
	// from the workspace and the user.
	PlaygroundUserID *uuid.UUID `json:"playground_user_id" jsonschema:"nullable"`
	// Warning says that the amount stored is not what is enforced: an
	// older version saved it finer than a nano-dollar or beyond what gw
	// counts, and amount_usd is the amount enforced instead (rounded
	// down). Saving the policy again with a valid amount clears it.
	Warning *string `json:"warning" jsonschema:"nullable"`
}

// TagBudgetCreate is a budget for the keys carrying one tag (issue 21):
// gw makes it a policy targeting selected_keys with a shared budget rule,
// and keeps the key list on the keys that carry the tag.
type TagBudgetCreate struct {
	// Name is the policy's; default budget-<key>-<value>.
	Name      string `json:"name,omitempty" jsonschema:"minLength=1,maxLength=100"`
	TagKey    string `json:"tag_key" jsonschema:"minLength=1,maxLength=64,pattern=^[a-z0-9][a-z0-9_.-]*$"`
	TagValue  string `json:"tag_value" jsonschema:"minLength=1,maxLength=128"`
	AmountUSD string `json:"amount_usd"`
	Period    string `json:"period" jsonschema:"enum=day,enum=month"`
}

// TagBudget is a tag budget: the tag its key list follows and its policy.
type TagBudget struct {
	PolicyID    uuid.UUID `json:"policy_id"`
	WorkspaceID uuid.UUID `json:"workspace_id"`
	TagKey      string    `json:"tag_key"`
	TagValue    string    `json:"tag_value"`
	CreatedAt   time.Time `json:"created_at"`
	Policy      Policy    `json:"policy"`
}
