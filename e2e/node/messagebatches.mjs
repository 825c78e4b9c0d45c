// The @anthropic-ai/sdk npm package, unchanged, against gw serve running
// Anthropic's Message Batches itself (issue 34): a batch created and polled
// until ended, its results read from results_url; a second batch
// cancelled, refused deletion while processing, listed with before_id, and
// deleted once ended. e2e/messagebatches_node_test.go runs it with GW_INF_BASE
// ({base}/inf) and GW_INF_KEY. Every check throws on a wrong answer; the
// last line is a JSON summary.
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";

const base = process.env.GW_INF_BASE;
const apiKey = process.env.GW_INF_KEY;
assert.ok(base && apiKey, "GW_INF_BASE and GW_INF_KEY are required");
const client = new Anthropic({ baseURL: base, apiKey, maxRetries: 0 });
const model = "anthropic/claude-haiku-4-5-20251001";

const requests = (ids) => ids.map((id) => ({ custom_id: id, params: { model, max_tokens: 20, messages: [{ role: "user", content: "hi " + id }] } }));

const until = async (id) => {
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
    const b = await client.messages.batches.retrieve(id);
    if (b.processing_status === "ended") return b;
  }
  throw new Error("message batch " + id + " did not end in time");
};

const batch = await client.messages.batches.create({ requests: requests(["a", "b", "c"]) });
assert.equal(batch.type, "message_batch");
assert.ok(batch.id.startsWith("msgbatch_"));
assert.equal(batch.request_counts.processing, 3);
const done = await until(batch.id);
assert.equal(done.request_counts.succeeded, 3);
assert.equal(done.request_counts.errored, 0);
assert.ok(done.results_url && done.ended_at);
const results = [];
for await (const r of await client.messages.batches.results(batch.id)) results.push(r);
assert.deepEqual(results.map((r) => r.custom_id), ["a", "b", "c"]);
for (const r of results) {
  assert.equal(r.result.type, "succeeded");
  assert.equal(r.result.message.content[0].text, "hello from upstream");
}

// A second batch, cancelled at once: what had not run never runs.
const second = await client.messages.batches.create({ requests: requests(Array.from({ length: 40 }, (_, i) => "m" + i)) });
// Not deleted while it is processing, as Anthropic refuses it.
await assert.rejects(client.messages.batches.delete(second.id),
  (e) => e.status === 400 && e.error?.error?.type === "invalid_request_error" && e.error.error.message.includes("still processing"));
const canceling = await client.messages.batches.cancel(second.id);
assert.ok(["canceling", "ended"].includes(canceling.processing_status), "cancel answered " + canceling.processing_status);
const cancelled = await until(second.id);
assert.ok(cancelled.request_counts.canceled > 0, "a cancelled batch ran every request");
let canceledResults = 0;
for await (const r of await client.messages.batches.results(second.id)) if (r.result.type === "canceled") canceledResults++;
assert.equal(canceledResults, cancelled.request_counts.canceled);

const listed = [];
for await (const b of client.messages.batches.list({ limit: 1 })) listed.push(b.id);
assert.deepEqual(listed, [second.id, batch.id]);

// A refused request is named by its index and custom_id, in Anthropic's shape.
await assert.rejects(client.messages.batches.create({ requests: [...requests(["ok"]), { custom_id: "bad", params: { model: "anthropic/nope", max_tokens: 5, messages: [] } }] }),
  (e) => e.status === 400 && e.error?.type === "error" && e.error.error.type === "invalid_request_error" && e.error.error.message.includes('requests[1] (custom_id "bad")'));

// The page newer than a batch (before_id), newest first.
const newer = await client.messages.batches.list({ before_id: batch.id });
assert.deepEqual(newer.data.map((b) => b.id), [second.id]);
assert.equal(newer.has_more, false);
assert.equal(newer.first_id, second.id);

// An ended batch is deleted as Anthropic deletes it: then it is not found.
const deleted = await client.messages.batches.delete(second.id);
assert.deepEqual({ id: deleted.id, type: deleted.type }, { id: second.id, type: "message_batch_deleted" });
await assert.rejects(client.messages.batches.retrieve(second.id), (e) => e.status === 404 && e.error?.error?.type === "not_found_error");
const left = [];
for await (const b of client.messages.batches.list()) left.push(b.id);
assert.deepEqual(left, [batch.id]);

console.log(JSON.stringify({ ok: true, succeeded: done.request_counts.succeeded, cancelled_ran: cancelled.request_counts.succeeded }));
