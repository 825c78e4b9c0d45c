// The openai npm package, unchanged, against gw serve running batches
// itself (issue 34): a file uploaded, a batch created and polled until
// completed, its output file read; a second batch cancelled. e2e/node_test.go
// runs it with GW_INF_BASE ({base}/inf) and GW_INF_KEY. Every check throws
// on a wrong answer; the last line is a JSON summary.
import assert from "node:assert/strict";
import OpenAI, { toFile } from "openai";

const base = process.env.GW_INF_BASE;
const apiKey = process.env.GW_INF_KEY;
assert.ok(base && apiKey, "GW_INF_BASE and GW_INF_KEY are required");
const openai = new OpenAI({ baseURL: base + "/v1", apiKey, maxRetries: 0 });
// GW_INF_BASE_OTHER, when set, is a second data plane: the batch is created,
// its output read and the second batch cancelled there, what the first
// plane uploaded and submitted (any plane serves any file or batch).
const otherBase = process.env.GW_INF_BASE_OTHER;
const other = otherBase ? new OpenAI({ baseURL: otherBase + "/v1", apiKey, maxRetries: 0 }) : openai;
const model = "openai/gpt-4o-mini";

const file = async (ids) => {
  const jsonl = ids.map((id) => JSON.stringify({ custom_id: id, method: "POST", url: "/v1/chat/completions",
    body: { model, max_tokens: 20, messages: [{ role: "user", content: "hi " + id }] } })).join("\n") + "\n";
  const f = await openai.files.create({ file: await toFile(Buffer.from(jsonl), "in.jsonl"), purpose: "batch" });
  assert.equal(f.object, "file");
  assert.equal(f.bytes, Buffer.byteLength(jsonl));
  return f;
};

const until = async (id, done) => {
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
    const b = await openai.batches.retrieve(id);
    if (done(b)) return b;
  }
  throw new Error("batch " + id + " did not finish in time");
};

const input = await file(["a", "b", "c"]);
const batch = await other.batches.create({ input_file_id: input.id, endpoint: "/v1/chat/completions", completion_window: "24h",
  metadata: { job: "node" } });
assert.equal(batch.object, "batch");
assert.equal(batch.request_counts.total, 3);
const done = await until(batch.id, (b) => b.status === "completed");
assert.equal(done.request_counts.completed, 3);
assert.equal(done.request_counts.failed, 0);
assert.equal(done.metadata.job, "node");
const out = await (await other.files.content(done.output_file_id)).text();
if (other !== openai) {
  // Both planes show the same batch and files.
  assert.deepEqual(await other.batches.retrieve(batch.id), done);
  assert.equal(await (await openai.files.content(done.output_file_id)).text(), out);
  assert.equal((await other.files.retrieve(input.id)).bytes, input.bytes);
  const files = [];
  for await (const f of other.files.list()) files.push(f);
  assert.equal(files.find((f) => f.id === input.id)?.bytes, input.bytes);
}
const lines = out.trim().split("\n").map((l) => JSON.parse(l));
assert.deepEqual(lines.map((l) => l.custom_id), ["a", "b", "c"]);
for (const l of lines) {
  assert.equal(l.error, null);
  assert.equal(l.response.status_code, 200);
  assert.equal(l.response.body.choices[0].message.content, "hello from upstream");
}

// A second batch, cancelled at once: what had not run never runs.
const many = await file(Array.from({ length: 40 }, (_, i) => "m" + i));
const second = await openai.batches.create({ input_file_id: many.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
const cancelling = await other.batches.cancel(second.id);
assert.ok(["cancelling", "cancelled"].includes(cancelling.status), "cancel answered " + cancelling.status);
const cancelled = await until(second.id, (b) => b.status === "cancelled");
assert.ok(cancelled.request_counts.completed < 40, "a cancelled batch ran every line");

const listed = [];
for await (const b of other.batches.list()) listed.push(b.id);
assert.ok(listed.includes(batch.id) && listed.includes(second.id));

console.log(JSON.stringify({ ok: true, completed: done.request_counts.completed, cancelled_ran: cancelled.request_counts.completed,
  batches: [batch.id, second.id] }));
