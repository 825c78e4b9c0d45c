package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// Evaluate decides what the policies do to one request (DESIGN §6).
//
// A policy applies when it is enabled and its target covers the request's
// key; a rule applies when its match matches. Since rules and policies are
// unordered, every combination is order independent: allowlists intersect,
// any deny denies, the lowest price ceilings and token limit win, credential
// scopes intersect, every budget counts, and one fallback is chosen by a
// fixed preference. In the discovery phase only the rules that need no
// request facts are applied (spec 4.9).
//
// Evaluate is pure and deterministic: the same policies in any order give an
// identical Decision, except that RuleIndex follows a rule to its position.
func Evaluate(policies []Policy, req Request) Decision {
	e := evaluation{
		req:       req,
		discovery: req.Phase == PhaseDiscovery,
		available: maskOf(req.CredentialScopes),
		allowed:   allScopes,
	}
	// Visiting the applicable policies in the order their reasons are listed
	// leaves only each policy's own few reasons to sort; sorting the whole
	// list was the largest cost with many policies.
	applicable := make([]*Policy, 0, len(policies))
	rules := 0
	for i := range policies {
		if p := &policies[i]; p.Enabled && p.Definition.Target.covers(req) {
			applicable = append(applicable, p)
			rules += len(p.Definition.Rules)
		}
	}
	slices.SortFunc(applicable, func(a, b *Policy) int { return compareRefs(policyRef(a), policyRef(b)) })
	e.d.Reasons = make([]Reason, 0, rules)
	for i, p := range applicable {
		for j := range p.Definition.Rules {
			r := &p.Definition.Rules[j]
			if e.discovery && !r.decidableInDiscovery() {
				continue
			}
			if !r.Match.matches(req, e.discovery) {
				continue
			}
			e.apply(p, j, r)
		}
		// Policies sharing an id and a name (never two in one store) have
		// their reasons sorted as one group, as a full sort would.
		if i+1 == len(applicable) || compareRefs(policyRef(p), policyRef(applicable[i+1])) != 0 {
			e.groupEnds = append(e.groupEnds, len(e.d.Reasons))
		}
	}
	return e.decide()
}

func policyRef(p *Policy) RuleRef { return RuleRef{PolicyID: p.ID, PolicyName: p.Name} }

// covers reports whether the target selects the request's key. A target of
// an unknown kind covers nothing.
func (t Target) covers(req Request) bool {
	switch t.Kind {
	case TargetWorkspace:
		return true
	case TargetSelectedUsers:
		return slices.Contains(t.UserIDs, req.OwnerUserID)
	case TargetSelectedKeys:
		return slices.Contains(t.KeyIDs, req.KeyID)
	}
	return false
}

// matches reports whether the match selects the request. In discovery only
// the model is known; decidableInDiscovery has already set aside the
// matches that need more.
func (m Match) matches(req Request, discovery bool) bool {
	switch m.Kind {
	case MatchAllRequests:
		return true
	case MatchRequest:
		if len(m.Models) > 0 && !slices.Contains(m.Models, req.Model) {
			return false
		}
		if discovery {
			return true
		}
		if m.Stream != nil && *m.Stream != req.Stream {
			return false
		}
		for _, c := range m.Capabilities {
			if !slices.Contains(req.Capabilities, c) {
				return false
			}
		}
		return true
	}
	return false
}

// decidableInDiscovery reports whether the rule can be applied while listing
// models: its action must be about which models are usable, and its match
// may look at the model id only. A request match with no conditions at all
// is as unconditional as all_requests.
func (r *Rule) decidableInDiscovery() bool {
	switch r.Action.Kind {
	case ActionModels, ActionProviders, ActionPriceLimit, ActionDeny, ActionCredentialAccess:
	default:
		return false
	}
	switch r.Match.Kind {
	case MatchAllRequests:
		return true
	case MatchRequest:
		return r.Match.Stream == nil && len(r.Match.Capabilities) == 0
	}
	return false
}

// evaluation accumulates the applied rules of one Evaluate call.
type evaluation struct {
	req       Request
	discovery bool
	d         Decision

	modelRefused, providerRefused, priceRefused bool

	denies []denial

	available scopeMask // where the model has credentials
	allowed   scopeMask // what every credential_access rule allows
	credRules []credentialRule

	fallbacks []fallbackCandidate

	text requestTexts

	// groupEnds are where each policy's reasons end in d.Reasons.
	groupEnds []int
}

type denial struct {
	ref     RuleRef
	message string
}

// credentialRule and fallbackCandidate keep the position of their reason,
// whose effect and detail are known only once every rule is in.
type credentialRule struct {
	reason int
	scopes scopeMask
}

type fallbackCandidate struct {
	reason      int
	ref         RuleRef
	action      *Action
	specificity int
}

func (e *evaluation) apply(p *Policy, index int, r *Rule) {
	ref := RuleRef{PolicyID: p.ID, PolicyName: p.Name, RuleIndex: index}
	a := &r.Action
	switch a.Kind {
	case ActionModels:
		if slices.Contains(a.Names, e.req.Model) {
			e.reason(ref, a.Kind, EffectAdmit, e.requestText(&e.text.modelAdmit, "model ", e.req.Model, " is on the models allowlist"))
		} else {
			e.modelRefused = true
			e.reason(ref, a.Kind, EffectDeny, e.requestText(&e.text.modelDeny, "model ", e.req.Model, " is not on the models allowlist"))
		}
	case ActionProviders:
		if slices.Contains(a.Names, e.req.Provider) {
			e.reason(ref, a.Kind, EffectAdmit, e.requestText(&e.text.providerAdmit, "provider ", e.req.Provider, " is on the providers allowlist"))
		} else {
			e.providerRefused = true
			e.reason(ref, a.Kind, EffectDeny, e.requestText(&e.text.providerDeny, "provider ", e.req.Provider, " is not on the providers allowlist"))
		}
	case ActionDeny:
		e.denies = append(e.denies, denial{ref, a.Message})
		e.reason(ref, a.Kind, EffectDeny, "denied: "+strconv.Quote(a.Message))
	case ActionStrictParameters:
		e.d.StrictParameters = true
		e.reason(ref, a.Kind, EffectNarrow, "strict parameter checks apply")
	case ActionPriceLimit:
		e.applyPriceLimit(ref, a)
	case ActionRequestLimits:
		if e.d.MaxOutputTokens == 0 || a.MaxOutputTokens < e.d.MaxOutputTokens {
			e.d.MaxOutputTokens = a.MaxOutputTokens
		}
		e.reason(ref, a.Kind, EffectNarrow, "max_output_tokens at most "+strconv.FormatInt(a.MaxOutputTokens, 10))
	case ActionCredentialAccess:
		m := maskOf(a.Scopes)
		e.allowed &= m
		// Whether this rule narrowed or emptied the usable scopes depends on
		// every other such rule: explainCredentials fills the reason in.
		e.credRules = append(e.credRules, credentialRule{len(e.d.Reasons), m})
		e.reason(ref, a.Kind, "", "")
	case ActionFallback:
		e.fallbacks = append(e.fallbacks, fallbackCandidate{len(e.d.Reasons), ref, a, specificity(p.Definition.Target.Kind)})
		e.reason(ref, a.Kind, EffectNarrow, "")
	case ActionBudget:
		e.d.Budgets = append(e.d.Budgets, Budget{RuleRef: ref, AmountUSD: a.AmountUSD, Period: a.Period, Aggregation: a.Aggregation})
		e.reason(ref, a.Kind, EffectNarrow,
			"budget of "+a.AmountUSD.String()+" USD per "+string(a.Period)+", "+string(a.Aggregation))
	}
}

func (e *evaluation) applyPriceLimit(ref RuleRef, a *Action) {
	if e.d.MaxInputPricePerMTok == nil || a.MaxInputPricePerMTok.cmp(*e.d.MaxInputPricePerMTok) < 0 {
		in := a.MaxInputPricePerMTok
		e.d.MaxInputPricePerMTok = &in
	}
	if e.d.MaxOutputPricePerMTok == nil || a.MaxOutputPricePerMTok.cmp(*e.d.MaxOutputPricePerMTok) < 0 {
		out := a.MaxOutputPricePerMTok
		e.d.MaxOutputPricePerMTok = &out
	}
	within := e.req.InputPricePerMTok.LessThanOrEqual(a.MaxInputPricePerMTok.Value) &&
		e.req.OutputPricePerMTok.LessThanOrEqual(a.MaxOutputPricePerMTok.Value)
	effect, verb := EffectAdmit, " are within the ceilings "
	if !within {
		e.priceRefused = true
		effect, verb = EffectDeny, " exceed the ceilings "
	}
	e.reason(ref, a.Kind, effect, e.priceText()+verb+a.MaxInputPricePerMTok.String()+" / "+a.MaxOutputPricePerMTok.String())
}

func (e *evaluation) reason(ref RuleRef, kind ActionKind, effect Effect, detail string) {
	e.d.Reasons = append(e.d.Reasons, Reason{RuleRef: ref, Action: kind, Effect: effect, Detail: detail})
}

// requestTexts are the parts of reason details that depend only on the
// request. Twenty policies allowing the same model say the same sentence;
// each is built once, when a reason first needs it ("" until then).
type requestTexts struct {
	modelAdmit, modelDeny, providerAdmit, providerDeny, prices string
}

// requestText returns *slot, built the first time as before, the name
// quoted, and after (one allocation: the quote is made on the stack).
func (e *evaluation) requestText(slot *string, before, name, after string) string {
	if *slot == "" {
		var buf [128]byte
		*slot = before + string(strconv.AppendQuote(buf[:0], name)) + after
	}
	return *slot
}

func (e *evaluation) priceText() string {
	if e.text.prices == "" {
		e.text.prices = "prices " + e.req.InputPricePerMTok.String() + " in / " + e.req.OutputPricePerMTok.String() + " out per MTok"
	}
	return e.text.prices
}

func (e *evaluation) decide() Decision {
	usable := e.available & e.allowed
	e.explainCredentials(usable)
	e.chooseFallback()

	d := e.d
	d.CredentialScopes = usable.scopes()
	d.ModelAllowed = !e.modelRefused && !e.providerRefused && !e.priceRefused
	d.Allowed = d.ModelAllowed && len(e.denies) == 0 && usable != 0
	switch {
	case len(e.denies) > 0:
		d.DenyMessage = slices.MinFunc(e.denies, compareDenials).message
	case e.modelRefused:
		d.DenyMessage = fmt.Sprintf("model %q is not allowed by policy", e.req.Model)
	case e.providerRefused:
		d.DenyMessage = fmt.Sprintf("provider %q is not allowed by policy", e.req.Provider)
	case e.priceRefused:
		d.DenyMessage = fmt.Sprintf("model %q exceeds the price limit set by policy", e.req.Model)
	case e.available == 0:
		d.DenyMessage = fmt.Sprintf("no credential is configured for model %q", e.req.Model)
	case usable == 0:
		d.DenyMessage = fmt.Sprintf("no credential for model %q is allowed by policy", e.req.Model)
	}

	if d.Budgets == nil {
		d.Budgets = []Budget{}
	}
	slices.SortFunc(d.Budgets, compareBudgets)
	start := 0
	for _, end := range e.groupEnds {
		slices.SortFunc(d.Reasons[start:end], compareReasons)
		start = end
	}
	return d
}

// explainCredentials fills in the credential_access reasons once the final
// intersection is known. A rule denies only when the intersection left
// nothing of the scopes the model does have; with no credential at all
// there is nothing for a rule to take away.
func (e *evaluation) explainCredentials(usable scopeMask) {
	for _, c := range e.credRules {
		r := &e.d.Reasons[c.reason]
		switch {
		case e.available != 0 && usable == 0:
			r.Effect = EffectDeny
			r.Detail = "credential scopes limited to " + c.scopes.String() +
				"; with every credential_access rule applied none of the model's (" + e.available.String() + ") remain"
		case e.available&^c.scopes == 0:
			r.Effect = EffectAdmit
			r.Detail = "credential scopes limited to " + c.scopes.String() +
				", which includes every scope the model has credentials in"
		default:
			r.Effect = EffectNarrow
			r.Detail = "credential scopes limited to " + c.scopes.String() +
				"; the model's credentials in " + (e.available &^ c.scopes).String() + " are not used"
		}
	}
}

// chooseFallback keeps one fallback. Policies are unordered, so the choice
// is by preference: the most specific target (selected keys, then selected
// users, then the whole workspace) as an operator would expect a narrower
// policy to override a broader one, then the lowest policy id.
func (e *evaluation) chooseFallback() {
	if len(e.fallbacks) == 0 {
		return
	}
	best := slices.MinFunc(e.fallbacks, compareFallbacks)
	a := best.action
	e.d.Fallback = &Fallback{
		RuleRef:     best.ref,
		Models:      slices.Clone(a.Models),
		On:          slices.Clone(a.On),
		MaxAttempts: a.MaxAttempts,
		TimeoutMS:   a.TimeoutMS,
	}
	superseded := " not used: policy " + strconv.Quote(best.ref.PolicyName) +
		" (" + best.ref.PolicyID.String() + ") takes precedence"
	for _, f := range e.fallbacks {
		models := strings.Join(f.action.Models, ", ")
		if f.reason == best.reason {
			e.d.Reasons[f.reason].Detail = "fallback to " + models + " on " + joinEnum(a.On) +
				" (at most " + strconv.Itoa(a.MaxAttempts) + " attempts, " + strconv.Itoa(a.TimeoutMS) + " ms timeout)"
			continue
		}
		e.d.Reasons[f.reason].Detail = "fallback to " + models + superseded
	}
}

func specificity(k TargetKind) int {
	switch k {
	case TargetSelectedKeys:
		return 2
	case TargetSelectedUsers:
		return 1
	}
	return 0
}

func joinEnum[T ~string](items []T) string {
	return strings.Join(names(items), ", ")
}

// Covers reports whether the target selects the request's key: what a
// guardrail's target means (issue 32), as it is for a policy.
func (t Target) Covers(req Request) bool { return t.covers(req) }

// CoversKey reports whether the target selects a key (its id, its owner):
// the tool policies of the MCP gateway (server/toolpolicy) ask it.
func (t Target) CoversKey(keyID string, ownerUserID uuid.UUID) bool {
	return t.covers(Request{KeyID: keyID, OwnerUserID: ownerUserID})
}
