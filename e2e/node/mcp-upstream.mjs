// An upstream MCP server built with the TypeScript SDK
// (@modelcontextprotocol/sdk), started by the Go e2e tests in front of
// which gw serve runs (e2e/mcp_node_test.go, e2e/agents_test.go). It
// listens on 127.0.0.1:0 and prints {"port": N} on its first line, then
// one JSON line per tools/call it runs ({"call": name, "arguments": …}),
// so the test sees what reached it.
//
//   node mcp-upstream.mjs tools        the tools below, a session per client
//   node mcp-upstream.mjs conformance  what @modelcontextprotocol/conformance's
//                                      server scenarios call (tools, resources,
//                                      prompts, completion, logging)
//
// MCP_STATELESS=1 serves without sessions (a server and transport per
// request). MCP_REQUIRE_HEADER="Name: value" refuses (401) any request
// without that header: an upstream needing a header, or with
// "Authorization: Bearer <token>" one needing the token gw fetched from
// an OAuth token endpoint. Any request carrying a gw inference key
// (sk-gw-…) in any header prints {"leak": header}: gw must never forward
// the caller's credential.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  CreateMessageResultSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ErrorCode,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const kind = process.argv[2] ?? "tools";
const stateless = process.env.MCP_STATELESS === "1";
const required = process.env.MCP_REQUIRE_HEADER ?? "";
const [requiredName, requiredValue] = required ? [required.slice(0, required.indexOf(":")).trim().toLowerCase(), required.slice(required.indexOf(":") + 1).trim()] : ["", ""];

const say = (v) => process.stdout.write(JSON.stringify(v) + "\n");
const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(t);
      resolve();
    });
  });

// A 1×1 red PNG and a tiny WAV, for the conformance scenarios' media.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==";
const WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

function text(t) {
  return { content: [{ type: "text", text: t }] };
}

// tools: text, structured and error results, a slow tool.
const toolsServer = {
  info: { name: "gw-e2e-tools", version: "1.0.0" },
  capabilities: { tools: {} },
  tools: [
    { name: "echo", description: "Echoes its text", inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] } },
    {
      name: "add",
      description: "Adds two numbers, with a structured result",
      inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
      outputSchema: { type: "object", properties: { sum: { type: "number" } }, required: ["sum"] },
    },
    { name: "fail", description: "Always fails, as a tool result", inputSchema: { type: "object", properties: {} } },
    { name: "slow", description: "Answers after ms milliseconds", inputSchema: { type: "object", properties: { ms: { type: "number" } } } },
  ],
  async call(name, args, extra) {
    switch (name) {
      case "echo":
        return text(`echo: ${args.text}`);
      case "add": {
        const sum = Number(args.a) + Number(args.b);
        return { content: [{ type: "text", text: JSON.stringify({ sum }) }], structuredContent: { sum } };
      }
      case "fail":
        return { isError: true, content: [{ type: "text", text: "the tool failed on purpose" }] };
      case "slow":
        await sleep(Number(args.ms ?? 60000), extra.signal);
        return text("slow: done");
    }
    throw new McpError(ErrorCode.InvalidParams, `unknown tool ${name}`);
  },
};

// conformance: what the conformance package's server scenarios ask for,
// each tool, resource and prompt as its scenario describes it.
const schema2020 = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  $defs: { address: { type: "object", properties: { street: { type: "string" }, city: { type: "string" } } } },
  properties: { name: { type: "string" }, address: { $ref: "#/$defs/address" } },
  additionalProperties: false,
};
const noArgs = { type: "object", properties: {} };
const conformanceServer = {
  info: { name: "gw-e2e-conformance", version: "1.0.0" },
  capabilities: { tools: {}, resources: { subscribe: true }, prompts: {}, logging: {}, completions: {} },
  tools: [
    { name: "test_simple_text", description: "Simple text", inputSchema: noArgs },
    { name: "test_image_content", description: "An image", inputSchema: noArgs },
    { name: "test_audio_content", description: "An audio clip", inputSchema: noArgs },
    { name: "test_embedded_resource", description: "An embedded resource", inputSchema: noArgs },
    { name: "test_multiple_content_types", description: "Text, image and resource", inputSchema: noArgs },
    { name: "test_tool_with_logging", description: "Logs while it runs", inputSchema: noArgs },
    { name: "test_tool_with_progress", description: "Reports progress", inputSchema: noArgs },
    { name: "test_error_handling", description: "Always an error result", inputSchema: noArgs },
    { name: "test_sampling", description: "Asks the client's LLM", inputSchema: { type: "object", properties: { prompt: { type: "string" } }, required: ["prompt"] } },
    { name: "test_elicitation", description: "Asks the user", inputSchema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] } },
    { name: "test_elicitation_sep1034_defaults", description: "Elicitation with defaults", inputSchema: noArgs },
    { name: "test_elicitation_sep1330_enums", description: "Elicitation with enums", inputSchema: noArgs },
    { name: "json_schema_2020_12_tool", description: "Tool with JSON Schema 2020-12 features", inputSchema: schema2020 },
    { name: "test_reconnection", description: "Closes its stream mid-call", inputSchema: noArgs },
  ],
  async call(name, args, extra, server) {
    const log = (data) => server.sendLoggingMessage({ level: "info", data }, extra.sessionId);
    switch (name) {
      case "test_simple_text":
        return text("This is a simple text response for testing.");
      case "test_image_content":
        return { content: [{ type: "image", data: PNG, mimeType: "image/png" }] };
      case "test_audio_content":
        return { content: [{ type: "audio", data: WAV, mimeType: "audio/wav" }] };
      case "test_embedded_resource":
        return { content: [{ type: "resource", resource: { uri: "test://embedded-resource", mimeType: "text/plain", text: "This is an embedded resource content." } }] };
      case "test_multiple_content_types":
        return {
          content: [
            { type: "text", text: "Multiple content types test:" },
            { type: "image", data: PNG, mimeType: "image/png" },
            { type: "resource", resource: { uri: "test://mixed-content-resource", mimeType: "application/json", text: '{"test":"data","value":123}' } },
          ],
        };
      case "test_tool_with_logging":
        await log("Tool execution started");
        await sleep(50);
        await log("Tool processing data");
        await sleep(50);
        await log("Tool execution completed");
        return text("Tool with logging executed successfully");
      case "test_tool_with_progress": {
        const token = extra._meta?.progressToken;
        for (const progress of [0, 50, 100]) {
          if (token !== undefined) {
            await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress, total: 100 } });
          }
          if (progress < 100) await sleep(50);
        }
        return text("Tool with progress executed successfully");
      }
      case "test_error_handling":
        return { isError: true, content: [{ type: "text", text: "This tool intentionally returns an error for testing" }] };
      case "test_sampling": {
        // Asked in the call's own stream (extra.sendRequest), where a
        // client reading only its POST answers sees it.
        const r = await extra.sendRequest(
          { method: "sampling/createMessage", params: { messages: [{ role: "user", content: { type: "text", text: args.prompt } }], maxTokens: 100 } },
          CreateMessageResultSchema,
        );
        return text(`LLM response: ${r.content?.text ?? JSON.stringify(r.content)}`);
      }
      case "test_elicitation": {
        // Asked in the call's own stream (relatedRequestId), as sampling
        // is: on the session's standalone stream it would be dropped when
        // the client has not opened that stream yet (a race the SDK's
        // transport settles by dropping the message).
        const r = await server.elicitInput({
          message: args.message,
          requestedSchema: {
            type: "object",
            properties: { username: { type: "string", description: "User's response" }, email: { type: "string", description: "User's email address" } },
            required: ["username", "email"],
          },
        }, { relatedRequestId: extra.requestId });
        return text(`User response: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
      }
      case "test_elicitation_sep1034_defaults": {
        const r = await server.elicitInput({
          message: "Please accept the defaults",
          requestedSchema: {
            type: "object",
            properties: {
              name: { type: "string", default: "John Doe" },
              age: { type: "integer", default: 30 },
              score: { type: "number", default: 95.5 },
              status: { type: "string", enum: ["active", "inactive", "pending"], default: "active" },
              verified: { type: "boolean", default: true },
            },
          },
        }, { relatedRequestId: extra.requestId });
        return text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
      }
      case "test_elicitation_sep1330_enums": {
        const r = await server.elicitInput({
          message: "Pick options",
          requestedSchema: {
            type: "object",
            properties: {
              untitledSingle: { type: "string", enum: ["option1", "option2", "option3"] },
              titledSingle: { type: "string", oneOf: [{ const: "value1", title: "First Option" }, { const: "value2", title: "Second Option" }] },
              legacyEnum: { type: "string", enum: ["opt1", "opt2", "opt3"], enumNames: ["Option One", "Option Two", "Option Three"] },
              untitledMulti: { type: "array", items: { type: "string", enum: ["option1", "option2", "option3"] } },
              titledMulti: { type: "array", items: { anyOf: [{ const: "value1", title: "First Choice" }, { const: "value2", title: "Second Choice" }] } },
            },
          },
        }, { relatedRequestId: extra.requestId });
        return text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
      }
      case "json_schema_2020_12_tool":
        return text(`Received ${JSON.stringify(args)}`);
      case "test_reconnection":
        // The SDK's transport closes the SSE stream of this request when
        // the server offers an event store; this server keeps none, so
        // the call simply answers.
        return text("Reconnection test completed successfully");
    }
    throw new McpError(ErrorCode.InvalidParams, `unknown tool ${name}`);
  },
};

const resources = [
  { uri: "test://static-text", name: "static-text", description: "A static text resource", mimeType: "text/plain" },
  { uri: "test://static-binary", name: "static-binary", description: "A static binary resource", mimeType: "image/png" },
  { uri: "test://watched-resource", name: "watched-resource", description: "A resource to subscribe to", mimeType: "text/plain" },
];
const prompts = [
  { name: "test_simple_prompt", description: "A simple prompt" },
  {
    name: "test_prompt_with_arguments",
    description: "A prompt with arguments",
    arguments: [
      { name: "arg1", description: "First test argument", required: true },
      { name: "arg2", description: "Second test argument", required: true },
    ],
  },
  { name: "test_prompt_with_embedded_resource", description: "A prompt with a resource", arguments: [{ name: "resourceUri", description: "The resource's URI", required: true }] },
  { name: "test_prompt_with_image", description: "A prompt with an image" },
];

function newServer() {
  const def = kind === "conformance" ? conformanceServer : toolsServer;
  const server = new Server(def.info, { capabilities: def.capabilities });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: def.tools }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    say({ call: req.params.name, arguments: req.params.arguments ?? {} });
    return def.call(req.params.name, req.params.arguments ?? {}, extra, server);
  });
  if (kind !== "conformance") return server;
  const subscribed = new Set();
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [{ uriTemplate: "test://template/{id}/data", name: "template", description: "Data by id", mimeType: "application/json" }],
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (req) => {
    const uri = req.params.uri;
    if (uri === "test://static-text" || uri === "test://watched-resource") {
      return { contents: [{ uri, mimeType: "text/plain", text: "This is the content of the static text resource." }] };
    }
    if (uri === "test://static-binary") return { contents: [{ uri, mimeType: "image/png", blob: PNG }] };
    const m = /^test:\/\/template\/([^/]+)\/data$/.exec(uri);
    if (m) return { contents: [{ uri, mimeType: "application/json", text: JSON.stringify({ id: m[1], templateTest: true, data: `Data for ID: ${m[1]}` }) }] };
    throw new McpError(ErrorCode.InvalidParams, `unknown resource ${uri}`);
  });
  server.setRequestHandler(SubscribeRequestSchema, async (req) => (subscribed.add(req.params.uri), {}));
  server.setRequestHandler(UnsubscribeRequestSchema, async (req) => (subscribed.delete(req.params.uri), {}));
  server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts }));
  server.setRequestHandler(GetPromptRequestSchema, async (req) => {
    const a = req.params.arguments ?? {};
    switch (req.params.name) {
      case "test_simple_prompt":
        return { messages: [{ role: "user", content: { type: "text", text: "This is a simple prompt for testing." } }] };
      case "test_prompt_with_arguments":
        return { messages: [{ role: "user", content: { type: "text", text: `Prompt with arguments: arg1='${a.arg1}', arg2='${a.arg2}'` } }] };
      case "test_prompt_with_embedded_resource":
        return {
          messages: [
            { role: "user", content: { type: "resource", resource: { uri: a.resourceUri, mimeType: "text/plain", text: "Embedded resource content for testing." } } },
            { role: "user", content: { type: "text", text: "Please process the embedded resource above." } },
          ],
        };
      case "test_prompt_with_image":
        return {
          messages: [
            { role: "user", content: { type: "image", data: PNG, mimeType: "image/png" } },
            { role: "user", content: { type: "text", text: "Please analyze the image above." } },
          ],
        };
    }
    throw new McpError(ErrorCode.InvalidParams, `unknown prompt ${req.params.name}`);
  });
  server.setRequestHandler(CompleteRequestSchema, async (req) => {
    const v = String(req.params.argument?.value ?? "");
    const values = ["paris", "park", "party"].filter((x) => x.startsWith(v));
    return { completion: { values, total: values.length, hasMore: false } };
  });
  return server;
}

const sessions = new Map();

// The conformance upstream refuses a Host or Origin that is not this
// loopback listener (DNS rebinding protection, one of the scenarios).
function transportOptions(extra) {
  if (kind !== "conformance") return extra;
  const port = httpServer.address().port;
  const hosts = [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`];
  return { ...extra, enableDnsRebindingProtection: true, allowedHosts: hosts, allowedOrigins: hosts.map((h) => `http://${h}`) };
}

async function readBody(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const raw = Buffer.concat(chunks).toString("utf8");
  return raw ? JSON.parse(raw) : undefined;
}

const httpServer = http.createServer(async (req, res) => {
  try {
    for (const [name, value] of Object.entries(req.headers)) {
      if (String(value).includes("sk-gw-")) say({ leak: name });
    }
    if (requiredName && req.headers[requiredName] !== requiredValue) {
      res.writeHead(401, { "Content-Type": "application/json", "WWW-Authenticate": "Bearer" });
      res.end(JSON.stringify({ error: "missing or wrong " + requiredName }));
      return;
    }
    const body = req.method === "POST" ? await readBody(req) : undefined;
    if (stateless) {
      const server = newServer();
      const transport = new StreamableHTTPServerTransport(transportOptions({ sessionIdGenerator: undefined }));
      res.on("close", () => {
        transport.close();
        server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
      return;
    }
    const sid = req.headers["mcp-session-id"];
    let transport = sid ? sessions.get(sid) : undefined;
    if (!transport) {
      if (sid || body?.method !== "initialize") {
        res.writeHead(sid ? 404 : 400, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message: sid ? "unknown session" : "no session: initialize first" } }));
        return;
      }
      transport = new StreamableHTTPServerTransport(
        transportOptions({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (id) => sessions.set(id, transport) }),
      );
      transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
      await newServer().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  } catch (err) {
    if (!res.headersSent) {
      res.writeHead(500, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32603, message: String(err) } }));
    }
  }
});

httpServer.listen(0, "127.0.0.1", () => say({ port: httpServer.address().port }));
process.on("SIGTERM", () => process.exit(0));
