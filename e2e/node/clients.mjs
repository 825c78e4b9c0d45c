// Real clients, unchanged, against a running gw serve: the openai and
// @anthropic-ai/sdk npm packages. e2e/node_test.go starts gw with fake
// upstreams and runs this with GW_INF_BASE ({base}/inf) and GW_INF_KEY.
// Every check throws on a wrong answer; the last line is a JSON summary.
import assert from "node:assert/strict";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { jsonSchemaOutputFormat } from "@anthropic-ai/sdk/helpers/json-schema";

const base = process.env.GW_INF_BASE;
const apiKey = process.env.GW_INF_KEY;
assert.ok(base && apiKey, "GW_INF_BASE and GW_INF_KEY are required");

const openai = new OpenAI({ baseURL: base + "/v1", apiKey, maxRetries: 0 });
// The Anthropic SDKs append /v1/messages to their base URL.
const anthropic = new Anthropic({ baseURL: base, apiKey, maxRetries: 0 });
const chatModel = "openai/gpt-4o-mini";
const claude = "anthropic/claude-haiku-4-5-20251001";
const summary = {};

// Chat Completions, whole and streamed.
const chat = await openai.chat.completions.create({ model: chatModel, messages: [{ role: "user", content: "hi" }] });
assert.equal(chat.choices[0].message.content, "hello from upstream");
summary.chat = chat.usage.prompt_tokens;

let streamed = "";
let streamUsage;
const chatStream = await openai.chat.completions.create({
  model: chatModel, stream: true, stream_options: { include_usage: true },
  messages: [{ role: "user", content: "hi" }],
});
for await (const chunk of chatStream) {
  streamed += chunk.choices[0]?.delta?.content ?? "";
  if (chunk.usage) streamUsage = chunk.usage;
}
assert.equal(streamed, "hello from upstream");
assert.ok(streamUsage && streamUsage.completion_tokens > 0, "a streamed chat completion reports its usage");
summary.chat_stream = streamed;

// Responses, whole and streamed.
const resp = await openai.responses.create({ model: chatModel, input: "hi", instructions: "be brief" });
assert.equal(resp.output_text, "hello from upstream");
summary.responses = resp.usage.input_tokens;

let deltas = "";
let completed;
const respStream = await openai.responses.create({ model: chatModel, input: "hi", stream: true });
for await (const ev of respStream) {
  if (ev.type === "response.output_text.delta") deltas += ev.delta;
  if (ev.type === "response.completed") completed = ev.response;
}
assert.equal(deltas, "hello from upstream");
assert.ok(completed?.usage?.output_tokens > 0, "response.completed carries usage");
summary.responses_stream = deltas;

// Embeddings (the SDK asks for base64 and decodes it).
const emb = await openai.embeddings.create({ model: "openai/text-embedding-3-small", input: ["a", "b"], dimensions: 4 });
assert.equal(emb.data.length, 2);
assert.equal(emb.data[0].embedding.length, 4);
summary.embeddings = emb.data.length;

// Messages, to an Anthropic model (forwarded) and an OpenAI one
// (translated), whole and streamed.
for (const model of [claude, chatModel]) {
  const msg = await anthropic.messages.create({ model, max_tokens: 64, messages: [{ role: "user", content: "hi" }] });
  assert.equal(msg.content[0].type, "text");
  assert.equal(msg.content[0].text, "hello from upstream");
  assert.equal(msg.stop_reason, "end_turn");

  const stream = anthropic.messages.stream({ model, max_tokens: 64, messages: [{ role: "user", content: "hi" }] });
  let text = "";
  stream.on("text", (t) => { text += t; });
  const final = await stream.finalMessage();
  assert.equal(text, "hello from upstream");
  assert.ok(final.usage.output_tokens > 0, "message_delta carries usage");
  summary["messages " + model] = text;
}

// messages.parse sends its schema in output_config.format: on an OpenAI
// model gw translates it to a json_schema response_format (the fake
// upstream answers JSON only then), and the SDK parses the answer.
const parsed = await anthropic.messages.parse({
  model: chatModel, max_tokens: 64, messages: [{ role: "user", content: "capital of France?" }],
  output_config: { format: jsonSchemaOutputFormat({ type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false }) },
});
assert.equal(parsed.parsed_output?.city, "Paris");
summary["messages.parse"] = parsed.parsed_output.city;

// A wrong key is refused in the dialect of the path.
await assert.rejects(
  new Anthropic({ baseURL: base, apiKey: "sk-gw-wrong", maxRetries: 0 })
    .messages.create({ model: claude, max_tokens: 8, messages: [{ role: "user", content: "hi" }] }),
  (err) => err.status === 401,
);
await assert.rejects(
  new OpenAI({ baseURL: base + "/v1", apiKey: "sk-gw-wrong", maxRetries: 0 })
    .chat.completions.create({ model: chatModel, messages: [{ role: "user", content: "hi" }] }),
  (err) => err.status === 401,
);

console.log(JSON.stringify({ ok: true, ...summary }));
