package dataplane

import (
	"fmt"
	"net/http"

	"github.com/shopspring/decimal"

	"github.com/gw-gateway/gw/server/apidoc"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/wire"
)

// modelObject is a model as discovery returns it: OpenAI's members first
// (id, object, created, owned_by), so the official SDKs read it unchanged,
// then gw's, which say what the model costs and can do.
type modelObject = wire.ModelObject

// pricingObject is a model's pricing as discovery shows it.
func pricingObject(p catalog.Pricing) wire.ModelPricing {
	out := wire.ModelPricing{InputPerMTok: p.InputPerMTok, OutputPerMTok: p.OutputPerMTok, CacheReadPerMTok: p.CacheReadPerMTok,
		CacheWritePerMTok: p.CacheWritePerMTok, CacheWrite1hPerMTok: p.CacheWrite1hPerMTok}
	if lc := p.LongContext; lc != nil {
		out.LongContext = &wire.LongContextPricing{AboveInputTokens: lc.AboveInputTokens, InputPerMTok: lc.InputPerMTok,
			OutputPerMTok: lc.OutputPerMTok, CacheReadPerMTok: lc.CacheReadPerMTok, CacheWritePerMTok: lc.CacheWritePerMTok}
		if lc.CacheWrite1hPerMTok != "" {
			out.LongContext.CacheWrite1hPerMTok = &lc.CacheWrite1hPerMTok
		}
	}
	return out
}

var (
	chatEndpoints      = []string{"chat/completions", "responses", "messages"}
	embeddingEndpoints = []string{"embeddings"}
)

// catalogModel is a catalog model prepared once per admission: its prices
// as numbers for policy evaluation, and its encoded object.
type catalogModel struct {
	id, provider string
	input        decimal.Decimal
	output       decimal.Decimal
	object       *response
	// src is the catalog's entry, which an alias's object copies.
	src *catalog.Model
}

func prepareModels(c *catalog.Catalog) ([]catalogModel, error) {
	out := make([]catalogModel, len(c.Models))
	for i := range c.Models {
		m := &c.Models[i]
		in, err := decimal.NewFromString(m.Pricing.InputPerMTok)
		if err != nil {
			return nil, fmt.Errorf("model %s: input price: %w", m.ID, err)
		}
		outPrice, err := decimal.NewFromString(m.Pricing.OutputPerMTok)
		if err != nil {
			return nil, fmt.Errorf("model %s: output price: %w", m.ID, err)
		}
		typ, endpoints := string(catalog.ModelTypeChat), chatEndpoints
		if m.Embeds() {
			typ, endpoints = string(catalog.ModelTypeEmbedding), embeddingEndpoints
		}
		obj := mustJSON(modelObject{
			Type: typ, Endpoints: endpoints,
			ID: m.ID, Object: "model", Created: m.Created, OwnedBy: m.Provider,
			Name: m.Name, Provider: m.Provider, ContextWindow: m.ContextWindow, MaxOutputTokens: m.MaxOutputTokens,
			Pricing: pricingObject(m.Pricing), Capabilities: apidoc.Strings(m.Capabilities), Modalities: apidoc.Strings(m.Modalities),
		})
		out[i] = catalogModel{id: m.ID, provider: m.Provider, input: in, output: outPrice, object: newResponse(http.StatusOK, obj), src: m}
	}
	return out, nil
}

// modelView is what one group of keys may discover: the list response and
// each model's, and the model aliases it sees with their visible targets.
type modelView struct {
	list    *response
	byID    map[string]*response
	aliases map[string][]aliasTarget
}

// newModelView builds the view of the visible models and aliases, the
// list sorted by id (spec 4.9 rule 1).
func newModelView(models []catalogModel, visible []bool, aliases []viewAlias) *modelView {
	v := &modelView{byID: map[string]*response{}}
	entries := make([]listEntry, 0, len(models)+len(aliases))
	for i, m := range models {
		if !visible[i] {
			continue
		}
		entries = append(entries, listEntry{id: m.id, obj: m.object})
		v.byID[m.id] = m.object
	}
	if len(aliases) > 0 {
		v.aliases = make(map[string][]aliasTarget, len(aliases))
	}
	for _, a := range aliases {
		obj := aliasObject(a, models)
		entries = append(entries, listEntry{id: a.name, obj: obj})
		v.byID[a.name] = obj
		v.aliases[a.name] = a.targets
	}
	v.list = newResponse(http.StatusOK, writeList(entries))
	return v
}
