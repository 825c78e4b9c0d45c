// Proves gw's OpenAPI document with a TypeScript client: openapi-typescript
// turns a running gw serve's /api/v1/openapi.json into generated/gw.d.ts
// (e2e/openapi_test.go does it), tsc compiles this file against it, and
// node runs it. It creates a workspace and an inference key, reads the
// usage report with a typed period, and prints one JSON line.
import createClient from "openapi-fetch";
import type { paths } from "./generated/gw.js";

const server = process.env.GW_SERVER ?? "";
const org = process.env.GW_ORG ?? "";
const gw = createClient<paths>({ baseUrl: server, headers: { Authorization: `Bearer ${process.env.GW_TOKEN}` } });

function fail(what: string, error: unknown): never {
  console.error(`${what}: ${JSON.stringify(error)}`);
  process.exit(1);
}

const ws = await gw.POST("/api/v1/organizations/{org_id}/workspaces", {
  params: { path: { org_id: org } },
  body: { name: "Typed TS" },
});
if (!ws.data) fail("create workspace", ws.error);
const slug = ws.data.data.slug;

const key = await gw.POST("/api/v1/organizations/{org_id}/workspaces/{workspace_ref}/inference-keys", {
  params: { path: { org_id: org, workspace_ref: slug } },
  body: { name: "typed-ts" },
});
if (!key.data) fail("create inference key", key.error);

const period: "today" | "7d" | "30d" | "month_to_date" | "custom" = "7d";
const report = await gw.GET("/api/v1/organizations/{org_id}/reports/usage", {
  params: { path: { org_id: org }, query: { period } },
});
if (!report.data) fail("usage report", report.error);

console.log(JSON.stringify({
  workspace: slug,
  key_name: key.data.data.name,
  days: report.data.data.daily.length,
  cost_usd: report.data.data.totals.cost_usd,
}));
