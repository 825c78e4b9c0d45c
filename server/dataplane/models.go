package dataplane

import (
	"bytes"
	"fmt"
	"net/http"

	"github.com/shopspring/decimal"

	"github.com/gw-gateway/gw/server/catalog"
)

// modelObject is a model as discovery returns it: OpenAI's members first
// (id, object, created, owned_by), so the official SDKs read it unchanged,
// then gw's, which say what the model costs and can do.
type modelObject struct {
	ID              string               `json:"id"`
	Object          string               `json:"object"`
	Created         int64                `json:"created"`
	OwnedBy         string               `json:"owned_by"`
	Name            string               `json:"name"`
	Provider        string               `json:"provider"`
	ContextWindow   int64                `json:"context_window"`
	MaxOutputTokens int64                `json:"max_output_tokens"`
	Pricing         catalog.Pricing      `json:"pricing"`
	Capabilities    []catalog.Capability `json:"capabilities"`
	Modalities      []catalog.Modality   `json:"modalities"`
	// Type is chat or embedding; Endpoints the /inf/v1 paths that serve
	// the model, so a client can tell which models to use where.
	Type      string   `json:"type"`
	Endpoints []string `json:"endpoints"`
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
}

func prepareModels(c *catalog.Catalog) ([]catalogModel, error) {
	out := make([]catalogModel, len(c.Models))
	for i, m := range c.Models {
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
			Pricing: m.Pricing, Capabilities: m.Capabilities, Modalities: m.Modalities,
		})
		out[i] = catalogModel{id: m.ID, provider: m.Provider, input: in, output: outPrice, object: newResponse(http.StatusOK, obj)}
	}
	return out, nil
}

// modelView is what one group of keys may discover: the list response and
// each visible model's response, ready to write.
type modelView struct {
	list *response
	byID map[string]*response
}

// newModelView builds the view of the visible models; models is sorted by
// id (the catalog is), so the list is too (spec 4.9 rule 1).
func newModelView(models []catalogModel, visible []bool) *modelView {
	v := &modelView{byID: map[string]*response{}}
	var list bytes.Buffer
	list.WriteString(`{"object":"list","data":[`)
	first := true
	for i, m := range models {
		if !visible[i] {
			continue
		}
		if !first {
			list.WriteByte(',')
		}
		first = false
		list.Write(m.object.body)
		v.byID[m.id] = m.object
	}
	list.WriteString(`]}`)
	v.list = newResponse(http.StatusOK, list.Bytes())
	return v
}
