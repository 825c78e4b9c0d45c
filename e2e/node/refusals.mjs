// A budget refusal, sent once by every client (issue 35): the openai and
// @anthropic-ai/sdk packages, the AI SDK (ai + @ai-sdk/openai, Chat and
// Responses) and LangChain (@langchain/openai), each with its default
// retries, against gw serve with a budget of 0. Each client's fetch is
// counted: a retry would be a second request. e2e/node_test.go runs it
// with GW_INF_BASE ({base}/inf) and GW_INF_KEY and checks gw recorded one
// denied event a request. The last line is a JSON summary.
import assert from "node:assert/strict";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { generateText } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { ChatOpenAI } from "@langchain/openai";

const base = process.env.GW_INF_BASE;
const apiKey = process.env.GW_INF_KEY;
assert.ok(base && apiKey, "GW_INF_BASE and GW_INF_KEY are required");
const chatModel = "openai/gpt-4o-mini";
const claude = "anthropic/claude-haiku-4-5-20251001";

const summary = {};
async function once(name, call) {
  let sent = 0;
  let status = 0;
  const fetchCounted = async (input, init) => {
    sent++;
    const resp = await fetch(input, init);
    status = resp.status;
    return resp;
  };
  const started = Date.now();
  let failed;
  try {
    await call(fetchCounted);
  } catch (err) {
    failed = err;
  }
  summary[name] = { sent, status, ms: Date.now() - started, refused: !!failed };
}

const openaiBase = base + "/v1";
await once("openai", (fetch) =>
  new OpenAI({ baseURL: openaiBase, apiKey, fetch }).chat.completions.create({
    model: chatModel, messages: [{ role: "user", content: "hi" }],
  }));
await once("anthropic", (fetch) =>
  new Anthropic({ baseURL: base, apiKey, fetch }).messages.create({
    model: claude, max_tokens: 16, messages: [{ role: "user", content: "hi" }],
  }));
const ai = (fetch) => createOpenAI({ baseURL: openaiBase, apiKey, fetch });
await once("ai-sdk chat", (fetch) => generateText({ model: ai(fetch).chat(chatModel), prompt: "hi" }));
await once("ai-sdk responses", (fetch) => generateText({ model: ai(fetch).responses(chatModel), prompt: "hi" }));
await once("langchain", (fetch) =>
  new ChatOpenAI({ model: chatModel, apiKey, configuration: { baseURL: openaiBase, fetch } }).invoke("hi"));

// Every client is tried before any is judged, so a failure shows them all.
for (const [name, r] of Object.entries(summary)) {
  assert.ok(r.refused, `${name}: a refused request succeeded: ${JSON.stringify(summary)}`);
  assert.equal(r.sent, 1, `${name}: sent a refused request ${r.sent} times: ${JSON.stringify(summary)}`);
  assert.equal(r.status, 402, `${name}: refused with ${r.status}: ${JSON.stringify(summary)}`);
}
console.log(JSON.stringify({ ok: true, ...summary }));
