// The TypeScript SDK's MCP client (@modelcontextprotocol/sdk) through gw
// serve, run by e2e/mcp_node_test.go on each protocol version: the
// aggregated endpoint (GW_MCP_URL, tools named <server>__<tool>) and one
// server's (GW_MCP_URL/<server>), authenticated with the inference key
// (GW_INF_KEY) only. It prints one JSON line: what each step answered,
// which the Go test checks.
//
// The SDK's client always offers its latest version (2025-11-25) and
// takes any older one the server answers with. MCP_VERSION makes it offer
// that version instead, as a client of that version does (its fetch
// rewrites initialize's protocolVersion); every later request then
// carries the negotiated version in MCP-Protocol-Version, which the
// script records.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js";

const base = process.env.GW_MCP_URL;
const key = process.env.GW_INF_KEY;
const offered = process.env.MCP_VERSION || LATEST_PROTOCOL_VERSION;
if (!base || !key) throw new Error("GW_MCP_URL and GW_INF_KEY are required");

const headersSeen = new Set();
async function versionedFetch(url, init = {}) {
  let body = init.body;
  if (typeof body === "string" && body.includes('"initialize"')) {
    const msg = JSON.parse(body);
    if (msg.method === "initialize") {
      msg.params.protocolVersion = offered;
      body = JSON.stringify(msg);
    }
  } else {
    const h = new Headers(init.headers);
    if (h.get("mcp-protocol-version")) headersSeen.add(h.get("mcp-protocol-version"));
  }
  return fetch(url, { ...init, body });
}

async function connect(url, bearer = key) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
    fetch: versionedFetch,
  });
  const client = new Client({ name: "gw-e2e-ts-sdk", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}

// call runs one tools/call and says what came back: the result, or the
// JSON-RPC error the SDK threw.
async function call(client, name, args) {
  try {
    const r = await client.callTool({ name, arguments: args });
    return { result: r };
  } catch (err) {
    return { error: { code: err.code, message: err.message } };
  }
}

const out = { sdk_versions: SUPPORTED_PROTOCOL_VERSIONS, offered };

// Refused without a valid key: the SDK's error carries gw's 401 (err.code).
try {
  await connect(base, "sk-gw-not-a-key");
  out.unauthenticated = { status: 0, message: "connected" };
} catch (err) {
  out.unauthenticated = { status: err.code, message: String(err.message ?? err) };
}

{
  const { client, transport } = await connect(base);
  out.negotiated = transport.protocolVersion;
  out.session = Boolean(transport.sessionId);
  out.server = client.getServerVersion();
  out.ping = await client.ping();
  out.tools = (await client.listTools()).tools.map((t) => t.name);
  out.echo = await call(client, "tools__echo", { text: "hello from the TS SDK" });
  out.add = await call(client, "tools__add", { a: 2, b: 3 });
  out.fail = await call(client, "tools__fail", {});
  const start = Date.now();
  out.slow = await call(client, "tools__slow", { ms: 20000 });
  out.slow_ms = Date.now() - start;
  out.secured = await call(client, "secured__echo", { text: "through a header" });
  out.oauth = await call(client, "oauth__echo", { text: "through OAuth" });
  out.unknown = await call(client, "nosuch__echo", {});
  await transport.terminateSession();
  await client.close();
}
{
  const { client, transport } = await connect(`${base}/tools`);
  out.single_tools = (await client.listTools()).tools.map((t) => t.name);
  out.single_echo = await call(client, "echo", { text: "one server" });
  await client.close();
  void transport;
}
// MCP_DIRECT_URL: the same tools/call straight to the upstream and
// through gw's /inf/v1/mcp/tools, interleaved (so load and warm-up fall
// on both alike), in one run: the median of each, which the test logs.
if (process.env.MCP_DIRECT_URL) {
  const n = 50;
  const direct = new Client({ name: "gw-e2e-ts-sdk", version: "1.0.0" });
  await direct.connect(new StreamableHTTPClientTransport(new URL(process.env.MCP_DIRECT_URL)));
  const { client: through } = await connect(`${base}/tools`);
  const once = async (client, i) => {
    const start = performance.now();
    await client.callTool({ name: "echo", arguments: { text: `t${i}` } });
    return performance.now() - start;
  };
  await once(direct, -1);
  await once(through, -1);
  const d = [];
  const g = [];
  for (let i = 0; i < n; i++) {
    d.push(await once(direct, i));
    g.push(await once(through, i));
  }
  const median = (a) => a.sort((x, y) => x - y)[Math.floor(a.length / 2)];
  out.timing = { calls: n, direct_ms: median(d), through_gw_ms: median(g) };
  await direct.close();
  await through.close();
}
out.headers = [...headersSeen];
console.log(JSON.stringify(out));
