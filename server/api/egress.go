package api

import (
	"context"
	"errors"
	"net/url"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/egress"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/validate"
)

// egressPolicy is what a URL given to gw is checked against when it is
// saved: this process's part (--egress-deny-private) with the instance's
// setting. Data planes check every connection against the same, the
// setting reaching them in bundles.
func (s *Server) egressPolicy(ctx context.Context) (egress.Policy, error) {
	st, err := s.store.GetInstanceState(ctx)
	if err != nil {
		return egress.Policy{}, err
	}
	e := st.EgressSetting()
	return s.opts.Egress.WithInstance(egress.ParseRanges(e.Deny), egress.ParseRanges(e.Allow)), nil
}

// checkEgress adds a 422 item at loc when p refuses rawURL: the refusal
// names the address class. input is what the item echoes (nil inside a
// secret).
func checkEgress(ctx context.Context, p egress.Policy, errs *validate.Errors, loc validate.Loc, rawURL string, input any) {
	err := egress.CheckURL(ctx, p, rawURL)
	if err == nil {
		return
	}
	var refused *egress.Refusal
	if errors.As(err, &refused) {
		errs.Add(loc, "value_error", "Value error, "+err.Error(), input, map[string]any{"class": refused.Class.String()})
		return
	}
	errs.Add(loc, "url_parsing", "Input should be a URL whose host gw can read: "+err.Error(), input, nil)
}

// credentialURLs are the URLs a credential request gives that gw would
// call: its base URL, its settings' token_url and batch_s3_endpoint, and
// the token_uri of a service account's key file given as the secret.
type credentialURLs struct {
	baseURL, tokenURL, s3Endpoint, secret *string
}

// checkCredentialEgress adds to errs what the egress policy refuses of the
// URLs a credential request gives (what it leaves as it was was checked
// when it was given, and every connection is checked again when dialled).
// A URL of the wrong shape is left to the shape's own check.
func checkCredentialEgress(ctx context.Context, p egress.Policy, errs *validate.Errors, in credentialURLs) {
	if in.baseURL != nil && httpURL(*in.baseURL) {
		checkEgress(ctx, p, errs, validate.Loc{"body", "base_url"}, *in.baseURL, *in.baseURL)
	}
	if in.tokenURL != nil && httpURL(*in.tokenURL) {
		checkEgress(ctx, p, errs, validate.Loc{"body", "settings", "token_url"}, *in.tokenURL, *in.tokenURL)
	}
	if in.s3Endpoint != nil && httpURL(*in.s3Endpoint) {
		checkEgress(ctx, p, errs, validate.Loc{"body", "settings", "batch_s3_endpoint"}, *in.s3Endpoint, *in.s3Endpoint)
	}
	if in.secret != nil {
		if uri := providers.SecretTokenURI(*in.secret); uri != "" {
			if !httpURL(uri) {
				errs.Add(validate.Loc{"body", "secret", "token_uri"}, "url_parsing",
					"Input should be an absolute http(s) URL: the service account key file's token_uri", nil, nil)
				return
			}
			checkEgress(ctx, p, errs, validate.Loc{"body", "secret", "token_uri"}, uri, nil)
		}
	}
}

func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// checkCatalogEgress holds the base URLs of a catalog document's providers
// to the egress policy. Only address literals and metadata names are
// judged when saved (egress.NoLookup): a document names many public hosts,
// and resolving each would make an import wait on DNS. Every connection to
// them is checked when dialled.
func (s *Server) checkCatalogEgress(r *Request, c *catalog.Catalog) error {
	p, err := s.egressPolicy(r.ctx)
	if err != nil {
		return err
	}
	p.Resolver = egress.NoLookup
	var errs validate.Errors
	for i, prov := range c.Providers {
		if prov.BaseURL != "" && httpURL(prov.BaseURL) {
			checkEgress(r.ctx, p, &errs, validate.Loc{"body", "providers", i, "base_url"}, prov.BaseURL, prov.BaseURL)
		}
	}
	return errs.Err()
}
