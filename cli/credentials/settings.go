package credentials

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/wire"
)

func addSettingFlag(cmd *cobra.Command, settings *[]string) {
	cmd.Flags().StringArrayVar(settings, "setting", nil,
		"a non-secret setting KEY=VALUE, repeatable: region (bedrock); location, project (vertex); api_version, deployments.MODEL=DEPLOYMENT (azure-openai); token_url (vertex, azure-openai); batches=native|gateway (openai, azure-openai, anthropic, bedrock); batch_s3_uri, batch_role_arn, batch_s3_endpoint (bedrock batch inference)")
}

// credentialFields are a credential request's fields set by flags (the
// secret, read from stdin or a prompt, is never quoted back).
var credentialFields = []cmdutil.FlagField{
	{Loc: "body.settings", Flag: "--setting", Member: true},
	{Loc: "body.label", Flag: "--label"},
	{Loc: "body.base_url", Flag: "--base-url"},
	{Loc: "body.provider", Flag: "--provider", Input: true},
	{Loc: "body.secret", Flag: "the secret"},
}

// parseSettings reads --setting pairs; nil when there are none. The
// server checks which settings the provider's kind takes.
func parseSettings(pairs []string) (*wire.CredentialSettings, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	s := &wire.CredentialSettings{}
	fields := map[string]*string{"region": &s.Region, "project": &s.Project, "location": &s.Location,
		"api_version": &s.APIVersion, "token_url": &s.TokenURL, "batches": &s.Batches,
		"batch_s3_uri": &s.BatchS3URI, "batch_role_arn": &s.BatchRoleARN, "batch_s3_endpoint": &s.BatchS3Endpoint}
	for _, pair := range pairs {
		key, value, ok := strings.Cut(pair, "=")
		if !ok || value == "" {
			return nil, cmdutil.UsageError{Err: fmt.Errorf("--setting %q: want KEY=VALUE", pair)}
		}
		if model, isDeployment := strings.CutPrefix(key, "deployments."); isDeployment && model != "" {
			if s.Deployments == nil {
				s.Deployments = map[string]string{}
			}
			s.Deployments[model] = value
			continue
		}
		dst, known := fields[key]
		if !known {
			names := []string{"deployments.MODEL"}
			for k := range fields {
				names = append(names, k)
			}
			slices.Sort(names)
			return nil, cmdutil.UsageError{Err: errors.New("--setting " + key + ": unknown setting; want one of " + strings.Join(names, ", "))}
		}
		*dst = value
	}
	return s, nil
}

// settingsCell shows a credential's settings on one line.
func settingsCell(s *wire.CredentialSettings) string {
	if s == nil {
		return "-"
	}
	var parts []string
	for _, kv := range [][2]string{{"region", s.Region}, {"project", s.Project}, {"location", s.Location},
		{"api_version", s.APIVersion}, {"token_url", s.TokenURL}, {"batches", s.Batches},
		{"batch_s3_uri", s.BatchS3URI}, {"batch_role_arn", s.BatchRoleARN}, {"batch_s3_endpoint", s.BatchS3Endpoint}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	models := make([]string, 0, len(s.Deployments))
	for m := range s.Deployments {
		models = append(models, m)
	}
	slices.Sort(models)
	for _, m := range models {
		parts = append(parts, "deployments."+m+"="+s.Deployments[m])
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}
