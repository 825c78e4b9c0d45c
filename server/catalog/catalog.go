// Package catalog is gw's provider and model catalog: which upstream
// providers exist, how to reach them, and what each model can do and costs.
//
// A catalog is data, not code. The default one is embedded in the binary
// (default.yaml) and an operator may replace it with `gw catalog import -f
// FILE`; both go through Parse, so an imported file is held to exactly the
// rules the shipped one is. The package is pure: no I/O beyond the embedded
// file, no clock, no globals that change after start.
//
// Money never touches float64. Prices are decimal strings (USD per million
// tokens), arithmetic uses exact decimals, and a request's cost comes out as
// integer nano-dollars (1e-9 USD), the unit the usage tables store.
package catalog

import (
	"slices"
	"strings"
)

// Kind is the wire protocol an upstream speaks; it selects the adapter in
// server/providers, not the company behind the endpoint.
type Kind string

const (
	// KindOpenAI is api.openai.com itself, whose Chat Completions dialect has
	// parameters (max_completion_tokens, reasoning_effort, the developer
	// role) that look-alike servers do not all accept.
	KindOpenAI Kind = "openai"
	// KindAnthropic is the Anthropic Messages API.
	KindAnthropic Kind = "anthropic"
	// KindGoogle is the Gemini API through its OpenAI-compatible endpoint
	// ({base}/openai/chat/completions).
	KindGoogle Kind = "google"
	// KindOpenAICompatible is the common subset of Chat Completions spoken by
	// Mistral, DeepSeek, Groq and self-hosted servers (vLLM, Ollama, llama.cpp).
	KindOpenAICompatible Kind = "openai-compatible"
	// KindBedrock is Amazon Bedrock's runtime API: Converse and
	// ConverseStream for every model family, InvokeModel for Anthropic
	// models asked in the Messages dialect; requests signed with SigV4.
	KindBedrock Kind = "bedrock"
	// KindVertex is Google Vertex AI: Gemini's generateContent and
	// Anthropic's rawPredict, with OAuth tokens from a service account.
	KindVertex Kind = "vertex"
	// KindGemini is the Gemini API's own generateContent, with an API key:
	// what KindGoogle's compatible endpoint drops (thinking budgets,
	// cached content, safety settings, thought and cache counts) it keeps.
	KindGemini Kind = "gemini"
	// KindAzureOpenAI is Azure OpenAI: deployments, api-version, and the
	// api-key header or an Entra ID token.
	KindAzureOpenAI Kind = "azure-openai"
)

// Capability is something a request may require of a model (spec §2.8); a
// route whose model lacks a required capability is rejected.
type Capability string

const (
	CapabilityStreaming        Capability = "streaming"
	CapabilityTools            Capability = "tools"
	CapabilityReasoning        Capability = "reasoning"
	CapabilityStructuredOutput Capability = "structured_output"
)

// ModelType says which endpoints a model serves. Chat models (the zero
// value, written "chat" or left out) answer chat completions, responses and
// messages; embedding models answer embeddings only. The two never stand
// in for each other: a request for one on the other's endpoint is refused.
type ModelType string

const (
	ModelTypeChat      ModelType = "chat"
	ModelTypeEmbedding ModelType = "embedding"
)

// Modality is a kind of input content a model accepts (spec §2.8).
type Modality string

const (
	ModalityText  Modality = "text"
	ModalityImage Modality = "image"
	ModalityAudio Modality = "audio"
	ModalityVideo Modality = "video"
	ModalityPDF   Modality = "pdf"
)

// The closed vocabularies, in the order the spec lists them. They are
// unexported so no caller can widen them at run time; the accessors below
// hand out copies.
var (
	kinds        = []Kind{KindOpenAI, KindAnthropic, KindGoogle, KindOpenAICompatible, KindBedrock, KindVertex, KindGemini, KindAzureOpenAI}
	capabilities = []Capability{CapabilityStreaming, CapabilityTools, CapabilityReasoning, CapabilityStructuredOutput}
	modalities   = []Modality{ModalityText, ModalityImage, ModalityAudio, ModalityVideo, ModalityPDF}
)

// Kinds lists every provider kind.
func Kinds() []Kind { return slices.Clone(kinds) }

// Capabilities lists the capability vocabulary in spec order.
func Capabilities() []Capability { return slices.Clone(capabilities) }

// Modalities lists the modality vocabulary in spec order.
func Modalities() []Modality { return slices.Clone(modalities) }

// ValidKind reports whether s names a provider kind.
func ValidKind(s string) bool { return slices.Contains(kinds, Kind(s)) }

// ValidCapability reports whether s is in the capability vocabulary.
func ValidCapability(s string) bool { return slices.Contains(capabilities, Capability(s)) }

// ValidModality reports whether s is in the modality vocabulary.
func ValidModality(s string) bool { return slices.Contains(modalities, Modality(s)) }

// Catalog is a validated set of providers and their models.
//
// Both slices are sorted by ID; Parse, New and Default guarantee it, and the
// lookups binary-search on it, so build catalogs through those functions
// rather than by hand.
type Catalog struct {
	Providers []Provider `json:"providers" yaml:"providers"`
	Models    []Model    `json:"models" yaml:"models"`
}

// Provider is one upstream endpoint family.
type Provider struct {
	// ID is the first segment of every model ID of this provider; it never
	// contains a slash, so a model ID splits unambiguously at its first one.
	ID   string `json:"id" yaml:"id"`
	Name string `json:"name" yaml:"name"`
	Kind Kind   `json:"kind" yaml:"kind"`
	// BaseURL is the API root the adapter appends resource paths to
	// (/chat/completions, /messages, /models/{m}:generateContent), so it
	// carries the version segment and no trailing slash. It is the default
	// for the provider's credentials, which may give their own. Only an
	// openai-compatible provider (every self-hosted server lives somewhere
	// else) and an azure-openai one (each Azure resource has its own host)
	// may leave it empty; their credentials must then give one.
	BaseURL string `json:"base_url,omitempty" yaml:"base_url,omitempty"`
}

// Model is one model as a provider serves it.
type Model struct {
	// ID is "<provider>/<upstream model>"; the upstream part may itself
	// contain slashes (groq/meta-llama/llama-4-scout-17b-16e-instruct).
	ID       string `json:"id" yaml:"id"`
	Provider string `json:"provider" yaml:"provider"`
	Name     string `json:"name" yaml:"name"`
	// ContextWindow counts input and output tokens together.
	ContextWindow   int64        `json:"context_window" yaml:"context_window"`
	MaxOutputTokens int64        `json:"max_output_tokens" yaml:"max_output_tokens"`
	Pricing         Pricing      `json:"pricing" yaml:"pricing"`
	Capabilities    []Capability `json:"capabilities" yaml:"capabilities"`
	Modalities      []Modality   `json:"modalities" yaml:"modalities"`
	// Type is chat (empty) or embedding. Left out of the encoding for
	// chat models, so catalogs and bundles written before it existed keep
	// their bytes and hashes.
	Type ModelType `json:"type,omitempty" yaml:"type,omitempty"`
	// Created is the release date as a Unix timestamp; it fills the
	// `created` member of the OpenAI model object served by discovery.
	// Zero means unknown.
	Created int64 `json:"created" yaml:"created"`
	// Constraints, when set, are what the model refuses of a request its
	// API otherwise takes (Constraints). Left out of the encoding when
	// unset, so catalogs and bundles written before it existed keep their
	// bytes and hashes.
	Constraints *Constraints `json:"constraints,omitempty" yaml:"constraints,omitempty"`
}

// Constraints are a model's own request constraints (issue 35): the 2026
// APIs refuse, per model or per API version, members every earlier model
// took, and gw adapts a request to the model it actually calls — after
// routing and for each fallback anew — rather than have the upstream
// answer 400 (docs/dialects.md, "The 2026 API changes"). Absent members
// constrain nothing.
type Constraints struct {
	// SamplingParams false: the model refuses temperature, top_p and
	// top_k (Anthropic API version 2026-10-21, and models from Claude
	// Opus 4.7 on at any version); gw leaves them out.
	SamplingParams *bool `json:"sampling_params,omitempty" yaml:"sampling_params,omitempty"`
	// ForcedToolChoice false: the model refuses a forced tool choice
	// (Anthropic's any and tool, OpenAI's required and a named function);
	// gw sends auto instead.
	ForcedToolChoice *bool `json:"forced_tool_choice,omitempty" yaml:"forced_tool_choice,omitempty"`
	// AnthropicVersion is the anthropic-version the model is called with
	// (a date, YYYY-MM-DD); empty keeps gw's 2023-06-01. Only models of
	// kind anthropic take it: Bedrock and Vertex AI name their own
	// platform versions in the body.
	AnthropicVersion string `json:"anthropic_version,omitempty" yaml:"anthropic_version,omitempty"`
}

// RefusesSampling reports whether the model refuses temperature, top_p
// and top_k.
func (m Model) RefusesSampling() bool {
	return m.Constraints != nil && m.Constraints.SamplingParams != nil && !*m.Constraints.SamplingParams
}

// RefusesForcedToolChoice reports whether the model refuses a forced tool
// choice.
func (m Model) RefusesForcedToolChoice() bool {
	return m.Constraints != nil && m.Constraints.ForcedToolChoice != nil && !*m.Constraints.ForcedToolChoice
}

// AnthropicVersion is the anthropic-version the model is called with, ""
// for gw's default.
func (m Model) AnthropicVersion() string {
	if m.Constraints == nil {
		return ""
	}
	return m.Constraints.AnthropicVersion
}

// Pricing holds list prices in USD per million tokens as decimal strings
// (DecimalPattern), so that the wire, the files and the arithmetic all see
// the exact value an operator wrote.
//
// The four token categories are disjoint: InputPerMTok applies only to input
// that was neither read from nor written to a prompt cache. Where a provider
// bills no separate cache-write rate, the catalog repeats the input price,
// which is what such a write costs; a zero price really means free.
//
// Two optional members follow the providers' bills where one rate is not
// enough. CacheWrite1hPerMTok prices cache writes kept for an hour
// (Anthropic's extended TTL); empty means such a write costs what a
// five-minute one does. LongContext, when set, prices every token of a
// request whose input (fresh, cache read and cache written together)
// exceeds its threshold at its own rates (Gemini 2.5 Pro, Claude with
// the 1M-token context): the whole request, as the providers bill it,
// not only the tokens past the threshold. Both are left out of the
// encoding when unset, so catalogs and bundles written before they
// existed keep their bytes and hashes.
type Pricing struct {
	InputPerMTok        string              `json:"input_per_mtok" yaml:"input_per_mtok"`
	OutputPerMTok       string              `json:"output_per_mtok" yaml:"output_per_mtok"`
	CacheReadPerMTok    string              `json:"cache_read_per_mtok" yaml:"cache_read_per_mtok"`
	CacheWritePerMTok   string              `json:"cache_write_per_mtok" yaml:"cache_write_per_mtok"`
	CacheWrite1hPerMTok string              `json:"cache_write_1h_per_mtok,omitempty" yaml:"cache_write_1h_per_mtok,omitempty"`
	LongContext         *LongContextPricing `json:"long_context,omitempty" yaml:"long_context,omitempty"`
	// ServiceTiers prices the provider's service tiers (ServiceTierNames:
	// OpenAI's priority and flex processing) with the same members as the
	// base pricing, which stays the standard ("default") tier's. A request
	// is priced at the tier its answer names, else the one it asked for
	// (docs/metering.md). Left out of the encoding when empty.
	ServiceTiers map[string]ServiceTierPricing `json:"service_tiers,omitempty" yaml:"service_tiers,omitempty"`
	// Batch prices the lines of a batch (docs/metering.md, "Batch prices"). Absent, a line
	// costs the provider kind's published batch discount off every price
	// (BatchDiscountPercent: half, at openai, anthropic, bedrock, vertex
	// and azure-openai), and the normal prices at any other kind. Left out
	// of the encoding when unset.
	Batch *BatchPricing `json:"batch,omitempty" yaml:"batch,omitempty"`
}

// BatchPricing is what the providers publish for their batch APIs: input,
// output and cache reads. A batch line's cache writes cost the base
// pricing's, and the batch prices apply to the whole request, however
// long its context (the providers' batch price lists have no long-context
// tier of their own).
type BatchPricing struct {
	InputPerMTok     string `json:"input_per_mtok" yaml:"input_per_mtok"`
	OutputPerMTok    string `json:"output_per_mtok" yaml:"output_per_mtok"`
	CacheReadPerMTok string `json:"cache_read_per_mtok" yaml:"cache_read_per_mtok"`
}

// PriceClassBatch names the batch prices in a usage event's provenance
// (prices.price_class).
const PriceClassBatch = "batch"

// batchDiscounts are the provider kinds whose published batch price is a
// discount off every synchronous price, in percent: OpenAI's and Azure
// OpenAI's Batch API, Anthropic's Message Batches, Bedrock's and Vertex
// AI's batch inference are each half price.
var batchDiscounts = map[Kind]int64{KindOpenAI: 50, KindAnthropic: 50, KindBedrock: 50, KindVertex: 50, KindAzureOpenAI: 50}

// BatchDiscountPercent is the published batch discount of a provider kind
// (0: none known, a batch line costs the normal prices).
func BatchDiscountPercent(k Kind) int64 { return batchDiscounts[k] }

// ServiceTierPricing is one service tier's prices: the base pricing's
// members, without tiers of its own.
type ServiceTierPricing struct {
	InputPerMTok        string              `json:"input_per_mtok" yaml:"input_per_mtok"`
	OutputPerMTok       string              `json:"output_per_mtok" yaml:"output_per_mtok"`
	CacheReadPerMTok    string              `json:"cache_read_per_mtok" yaml:"cache_read_per_mtok"`
	CacheWritePerMTok   string              `json:"cache_write_per_mtok" yaml:"cache_write_per_mtok"`
	CacheWrite1hPerMTok string              `json:"cache_write_1h_per_mtok,omitempty" yaml:"cache_write_1h_per_mtok,omitempty"`
	LongContext         *LongContextPricing `json:"long_context,omitempty" yaml:"long_context,omitempty"`
}

// pricing is the tier as a Pricing, for the checks and the parse the base
// pricing goes through.
func (s ServiceTierPricing) pricing() Pricing {
	return Pricing{InputPerMTok: s.InputPerMTok, OutputPerMTok: s.OutputPerMTok, CacheReadPerMTok: s.CacheReadPerMTok,
		CacheWritePerMTok: s.CacheWritePerMTok, CacheWrite1hPerMTok: s.CacheWrite1hPerMTok, LongContext: s.LongContext}
}

// The service tiers a catalog may price. The standard tier is the base
// pricing; OpenAI names it "default" (and "auto" asks for the project's
// default), so neither is a key of ServiceTiers.
const (
	ServiceTierPriority = "priority"
	ServiceTierFlex     = "flex"
)

var serviceTierNames = []string{ServiceTierPriority, ServiceTierFlex}

// ServiceTierNames lists the tier names ServiceTiers may use.
func ServiceTierNames() []string { return slices.Clone(serviceTierNames) }

// LongContextPricing is the tier a request is priced at once its input
// exceeds AboveInputTokens. Its CacheWrite1hPerMTok is optional as the
// standard tier's is: empty means the tier's five-minute write price.
type LongContextPricing struct {
	AboveInputTokens    int64  `json:"above_input_tokens" yaml:"above_input_tokens"`
	InputPerMTok        string `json:"input_per_mtok" yaml:"input_per_mtok"`
	OutputPerMTok       string `json:"output_per_mtok" yaml:"output_per_mtok"`
	CacheReadPerMTok    string `json:"cache_read_per_mtok" yaml:"cache_read_per_mtok"`
	CacheWritePerMTok   string `json:"cache_write_per_mtok" yaml:"cache_write_per_mtok"`
	CacheWrite1hPerMTok string `json:"cache_write_1h_per_mtok,omitempty" yaml:"cache_write_1h_per_mtok,omitempty"`
}

// UpstreamModel is the model name to send to the provider: the ID without
// its "<provider>/" prefix.
func (m Model) UpstreamModel() string {
	return strings.TrimPrefix(m.ID, m.Provider+"/")
}

// HasCapability reports whether the model offers c.
func (m Model) HasCapability(c Capability) bool { return slices.Contains(m.Capabilities, c) }

// Embeds reports whether the model is an embedding model.
func (m Model) Embeds() bool { return m.Type == ModelTypeEmbedding }

// HasModality reports whether the model accepts input of modality md.
func (m Model) HasModality(md Modality) bool { return slices.Contains(m.Modalities, md) }

// Model looks a model up by its full ID. The returned value shares its
// slices with the catalog; treat them as read-only.
func (c *Catalog) Model(id string) (Model, bool) {
	i, ok := slices.BinarySearchFunc(c.Models, id, func(m Model, id string) int { return strings.Compare(m.ID, id) })
	if !ok {
		return Model{}, false
	}
	return c.Models[i], true
}

// Provider looks a provider up by ID.
func (c *Catalog) Provider(id string) (Provider, bool) {
	i, ok := slices.BinarySearchFunc(c.Providers, id, func(p Provider, id string) int { return strings.Compare(p.ID, id) })
	if !ok {
		return Provider{}, false
	}
	return c.Providers[i], true
}

// ModelsByProvider returns the models of one provider in ID order, as a new
// slice (nil when there are none). Because every ID starts with
// "<provider>/", one provider's models form a contiguous run of the sorted
// list, which a binary search finds without looking at the others.
func (c *Catalog) ModelsByProvider(provider string) []Model {
	prefix := provider + "/"
	lo, _ := slices.BinarySearchFunc(c.Models, prefix, func(m Model, p string) int { return strings.Compare(m.ID, p) })
	hi := lo
	for hi < len(c.Models) && strings.HasPrefix(c.Models[hi].ID, prefix) {
		hi++
	}
	if lo == hi {
		return nil
	}
	return cloneModels(c.Models[lo:hi])
}

// Clone returns a deep copy, so the copy can be edited (say, before an
// import is written) without disturbing readers of the original.
func (c *Catalog) Clone() *Catalog {
	if c == nil {
		return nil
	}
	return &Catalog{
		Providers: slices.Clone(c.Providers),
		Models:    cloneModels(c.Models),
	}
}

func cloneModels(ms []Model) []Model {
	if ms == nil {
		return nil
	}
	out := make([]Model, len(ms))
	for i, m := range ms {
		m.Capabilities = slices.Clone(m.Capabilities)
		m.Modalities = slices.Clone(m.Modalities)
		if c := m.Constraints; c != nil {
			copied := *c
			copied.SamplingParams, copied.ForcedToolChoice = cloneBool(c.SamplingParams), cloneBool(c.ForcedToolChoice)
			m.Constraints = &copied
		}
		if lc := m.Pricing.LongContext; lc != nil {
			copied := *lc
			m.Pricing.LongContext = &copied
		}
		if b := m.Pricing.Batch; b != nil {
			copied := *b
			m.Pricing.Batch = &copied
		}
		if m.Pricing.ServiceTiers != nil {
			tiers := make(map[string]ServiceTierPricing, len(m.Pricing.ServiceTiers))
			for name, t := range m.Pricing.ServiceTiers {
				if lc := t.LongContext; lc != nil {
					copied := *lc
					t.LongContext = &copied
				}
				tiers[name] = t
			}
			m.Pricing.ServiceTiers = tiers
		}
		out[i] = m
	}
	return out
}

func cloneBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	v := *b
	return &v
}
