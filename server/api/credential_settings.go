package api

import (
	"encoding/json"
	"sort"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/catalogdb"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

var (
	settingRule    = validate.StringRule{Min: 1, Max: 255, NoControl: true}
	deploymentRule = validate.StringRule{Min: 1, Max: 64, NoControl: true}
)

// credentialSettings is the settings member of a credential request:
// absent, null (cleared) or an object of the settings the provider kinds
// take (providers.Settings; which kind takes which, CheckSettings says).
type credentialSettings struct {
	present, cleared bool
	value            providers.Settings
}

// readSettings reads the settings member, strictly.
func readSettings(o *validate.Object) credentialSettings {
	v, ok := o.Raw("settings")
	if !ok {
		return credentialSettings{}
	}
	if v == nil {
		return credentialSettings{present: true, cleared: true}
	}
	out := credentialSettings{present: true}
	so := validate.ReadObject(v, o.Loc().With("settings"), o.Errors())
	if so == nil {
		return out
	}
	fields := map[string]*string{"region": &out.value.Region, "project": &out.value.Project, "location": &out.value.Location,
		"api_version": &out.value.APIVersion, "token_url": &out.value.TokenURL, "batches": &out.value.Batches,
		"batch_s3_uri": &out.value.BatchS3URI, "batch_role_arn": &out.value.BatchRoleARN, "batch_s3_endpoint": &out.value.BatchS3Endpoint}
	for name, dst := range fields {
		if s := optionalString(so, name, settingRule); s != nil {
			*dst = *s
		}
	}
	if raw, ok := so.Raw("deployments"); ok {
		out.value.Deployments = readDeployments(raw, so.Loc().With("deployments"), o.Errors())
	}
	so.Close()
	return out
}

func readDeployments(raw any, loc validate.Loc, errs *validate.Errors) map[string]string {
	m, ok := raw.(map[string]any)
	if !ok {
		errs.Add(loc, "dict_type", "Input should be a valid dictionary of model names to deployment names", raw, nil)
		return nil
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make(map[string]string, len(m))
	for _, model := range names {
		if s, ok := validate.String(m[model], loc.With(model), deploymentRule, errs); ok {
			out[model] = s
		}
	}
	return out
}

// checkCredential adds what is wrong with a credential's secret (when
// given) and settings for its provider's kind to the request's errors,
// located in the body; no message quotes the secret.
func checkCredential(o *validate.Object, kind catalog.Kind, secret *string, settings providers.Settings) {
	var problems []providers.CredentialProblem
	if secret != nil && *secret != "" {
		problems = append(problems, providers.CheckSecret(kind, *secret)...)
	}
	problems = append(problems, providers.CheckSettings(kind, settings)...)
	for _, p := range problems {
		loc := o.Loc()
		if p.Field == "secret" {
			loc = loc.With("secret")
		} else {
			loc = loc.With("settings", p.Field[len("settings."):])
		}
		o.Errors().Add(loc, p.Type, p.Message, nil, nil)
	}
}

// settingsColumn is settings as stored: nil for none.
func settingsColumn(s providers.Settings) *string {
	if s.Region == "" && s.Project == "" && s.Location == "" && s.APIVersion == "" && len(s.Deployments) == 0 && s.TokenURL == "" && s.Batches == "" &&
		s.BatchS3URI == "" && s.BatchRoleARN == "" && s.BatchS3Endpoint == "" {
		return nil
	}
	b, _ := json.Marshal(s) // strings and a map of strings always encode
	col := string(b)
	return &col
}

// storedSettings reads a credential's stored settings.
func storedSettings(c *store.ProviderCredential) providers.Settings {
	var s providers.Settings
	if c.Settings != nil {
		_ = json.Unmarshal([]byte(*c.Settings), &s) // written by settingsColumn
	}
	return s
}

// wireSettings is a credential's settings as the API shows them.
func wireSettings(c *store.ProviderCredential) *wire.CredentialSettings {
	if c.Settings == nil {
		return nil
	}
	s := storedSettings(c)
	return &wire.CredentialSettings{Region: s.Region, Project: s.Project, Location: s.Location, APIVersion: s.APIVersion,
		Deployments: s.Deployments, TokenURL: s.TokenURL, Batches: s.Batches, BatchS3URI: s.BatchS3URI, BatchRoleARN: s.BatchRoleARN,
		BatchS3Endpoint: s.BatchS3Endpoint}
}

// checkUpdatedCredential checks a credential as a PATCH leaves it: a new
// secret and the settings in force afterwards, for its provider's kind. A
// new token_url, like a new base_url, needs the secret again: the secret
// (an Entra ID client secret, a service account's signed assertion) goes
// wherever it points.
func (s *Server) checkUpdatedCredential(r *Request, c *store.ProviderCredential, secret *string,
	settings credentialSettings) error {
	kind, err := providerKind(r, c.Provider)
	if err != nil {
		return err
	}
	after := storedSettings(c)
	if settings.present {
		after = settings.value
	}
	var errs validate.Errors
	o := validate.ReadObject(map[string]any{}, validate.Loc{"body"}, &errs)
	if after.TokenURL != storedSettings(c).TokenURL && secret == nil {
		errs.Add(validate.Loc{"body", "secret"}, "missing",
			"Field required: changing settings.token_url needs the secret again, so it is never sent to a new host unasked", nil, nil)
	}
	if after.BatchS3Endpoint != storedSettings(c).BatchS3Endpoint && after.BatchS3Endpoint != "" && secret == nil {
		// The access key signs every request to it.
		errs.Add(validate.Loc{"body", "secret"}, "missing",
			"Field required: changing settings.batch_s3_endpoint needs the secret again, so the key never signs for a new host unasked", nil, nil)
	}
	if kind != "" && (secret != nil || settings.present) {
		checkCredential(o, kind, secret, after)
	}
	return errs.Err()
}

// providerKind is the kind of a catalog provider, retired or not; "" when
// the catalog no longer has it.
func providerKind(r *Request, provider string) (catalog.Kind, error) {
	rows, err := catalogdb.LoadRows(r.ctx, r.s.store)
	if err != nil {
		return "", err
	}
	for _, p := range rows.Providers {
		if p.ID == provider {
			return catalogdb.Provider(p).Kind, nil
		}
	}
	return "", nil
}
