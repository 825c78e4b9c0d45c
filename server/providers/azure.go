package providers

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
)

// Azure OpenAI speaks OpenAI's protocol (the OpenAI, OpenAIResponses and
// OpenAIEmbeddings adapters with DialectAzure) at its own addresses: a
// resource's host, a deployment per model, an api-version, and either the
// api-key header or a Microsoft Entra ID bearer token.

// azureDeployment is the deployment serving the call's model: the
// credential's deployments setting names it, else the deployment has the
// model's name.
func azureDeployment(call *Call) string {
	if d, ok := call.Settings.Deployments[call.UpstreamModel]; ok {
		return d
	}
	return call.UpstreamModel
}

// azureDeploymentURL is a deployment's operation URL with the api-version.
func azureDeploymentURL(call *Call, operation string) string {
	version := call.Settings.APIVersion
	if version == "" {
		version = defaultAzureAPIVersion
	}
	return trimBase(call.BaseURL) + "/openai/deployments/" + url.PathEscape(azureDeployment(call)) + operation +
		"?api-version=" + url.QueryEscape(version)
}

// azureAuth authenticates a call: with an Entra ID token when the secret
// is an Entra ID application (a JSON object), with the api-key header
// otherwise.
func azureAuth(ctx context.Context, client *http.Client, tokens *oauthTokens, call *Call) (func(http.Header), error) {
	if !looksJSON(call.Secret) {
		return func(h http.Header) { h.Set("Api-Key", call.Secret) }, nil
	}
	src, err := tokens.entra(client, call)
	if err != nil {
		return nil, err
	}
	token, err := bearer(ctx, src, call)
	if err != nil {
		return nil, err
	}
	return func(h http.Header) { h.Set("Authorization", "Bearer "+token) }, nil
}

// errContentFilter is the error of an answer Azure's content filters stopped: the
// caller's to read (400 content_filter), and its filtered output is never
// billed.
func errContentFilter() *Error {
	return &Error{Kind: Rejected, Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "content_filter",
		Message: "The provider's content filters stopped the answer (finish_reason content_filter)."}
}

// answerFiltered reports whether a chat.completion's choice was stopped by
// the content filters.
func answerFiltered(raw []byte) bool {
	if !bytes.Contains(raw, []byte("content_filter")) {
		return false
	}
	var choices []byte
	members, _ := objectMembers(nil, raw)
	for _, m := range members {
		if isKey(m.key, "choices") {
			choices = m.value
		}
	}
	return choicesFiltered(choices)
}

// choicesFiltered reports whether a choice finished with content_filter.
func choicesFiltered(choices []byte) bool {
	filtered := false
	var members []jsonMember
	arrayElements(choices, func(elem []byte) {
		members, _ = objectMembers(members[:0], elem)
		for _, m := range members {
			if isKey(m.key, "finish_reason") && string(m.value) == `"content_filter"` {
				filtered = true
			}
		}
	})
	return filtered
}
