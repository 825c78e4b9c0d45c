// Command goclient proves gw's OpenAPI document with a client oapi-codegen
// generates from it (into gwapi/, by e2e/openapi_test.go, from a running
// gw serve): it creates a workspace and an inference key in it, reads the
// usage report with a typed period, and prints what it got as one JSON
// line. GW_SERVER, GW_TOKEN and GW_ORG say where and as whom.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"

	"github.com/gw-gateway/gw/e2e/openapi/goclient/gwapi"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "goclient:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	token, org := os.Getenv("GW_TOKEN"), os.Getenv("GW_ORG")
	c, err := gwapi.NewClientWithResponses(os.Getenv("GW_SERVER"), gwapi.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+token)
		return nil
	}))
	if err != nil {
		return err
	}
	ws, err := c.PostOrganizationsByOrgIdWorkspacesWithResponse(ctx, org, gwapi.WorkspaceCreate{Name: "Typed Go"})
	if err != nil {
		return err
	}
	if ws.JSON200 == nil {
		return fmt.Errorf("create workspace: %d %s", ws.StatusCode(), ws.Body)
	}
	slug := ws.JSON200.Data.Slug
	key, err := c.PostOrganizationsByOrgIdWorkspacesByWorkspaceRefInferenceKeysWithResponse(ctx, org, slug, gwapi.InferenceKeyCreate{Name: "typed-go"})
	if err != nil {
		return err
	}
	if key.JSON200 == nil {
		return fmt.Errorf("create inference key: %d %s", key.StatusCode(), key.Body)
	}
	period := gwapi.GetOrganizationsByOrgIdReportsUsageParamsPeriodN7d
	report, err := c.GetOrganizationsByOrgIdReportsUsageWithResponse(ctx, org, &gwapi.GetOrganizationsByOrgIdReportsUsageParams{Period: &period})
	if err != nil {
		return err
	}
	if report.JSON200 == nil {
		return fmt.Errorf("usage report: %d %s", report.StatusCode(), report.Body)
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"workspace": slug, "key_name": key.JSON200.Data.Name, "days": len(report.JSON200.Data.Daily),
		"cost_usd": report.JSON200.Data.Totals.CostUsd,
	})
}
