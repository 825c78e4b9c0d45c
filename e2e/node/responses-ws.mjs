// Responses over WebSocket (issue 35) with the official openai npm SDK's
// client, unchanged: ResponsesWS from openai/resources/responses/ws (it
// needs the ws package) against gw serve's GET /inf/v1/responses. Two
// chained turns on one socket, the second naming the first's id in
// previous_response_id. e2e/node_test.go runs it with GW_INF_BASE
// ({base}/inf) and GW_INF_KEY against a fake upstream that answers the
// second turn with what it was sent of the first. Every check throws on a
// wrong answer; the last line is a JSON summary.
import assert from "node:assert/strict";
import OpenAI from "openai";
import { ResponsesWS } from "openai/resources/responses/ws";

const base = process.env.GW_INF_BASE;
const apiKey = process.env.GW_INF_KEY;
assert.ok(base && apiKey, "GW_INF_BASE and GW_INF_KEY are required");

const openai = new OpenAI({ baseURL: base + "/v1", apiKey, maxRetries: 0 });
const socket = new ResponsesWS(openai);
const model = "openai/gpt-4o-mini";

// turn sends one response.create and resolves with the completed response
// and the text its deltas carried; an error event rejects it.
function turn(params) {
  return new Promise((resolve, reject) => {
    let text = "";
    const onDelta = (ev) => { text += ev.delta; };
    const done = () => {
      socket.off("response.output_text.delta", onDelta);
      socket.off("response.completed", onCompleted);
      socket.off("error", onError);
    };
    const onCompleted = (ev) => { done(); resolve({ response: ev.response, text }); };
    const onError = (err) => { done(); reject(err); };
    socket.on("response.output_text.delta", onDelta);
    socket.on("response.completed", onCompleted);
    socket.on("error", onError);
    socket.send({ type: "response.create", model, ...params });
  });
}

const summary = {};
const first = await turn({ input: "FIRST_TURN: say the marker." });
assert.equal(first.text, "the marker is ws-e2e-7");
assert.equal(first.response.status, "completed");
assert.ok(first.response.id, "the first response has an id");
assert.ok(first.response.usage?.output_tokens > 0, "the first response reports its usage");
summary.first = first.text;

// The second turn names the first: gw sends its history upstream before
// the new input, and the fake answers with what it remembers.
const second = await turn({ previous_response_id: first.response.id, input: "SECOND_TURN: what was it?" });
assert.equal(second.text, "it was ws-e2e-7");
assert.equal(second.response.status, "completed");
assert.ok(second.response.usage?.output_tokens > 0, "the second response reports its usage");
summary.second = second.text;

const closed = new Promise((resolve) => socket.on("close", (code) => resolve(code)));
socket.close();
summary.close = await closed;
console.log(JSON.stringify({ ok: true, ...summary }));
