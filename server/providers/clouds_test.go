package providers

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/gw-gateway/gw/server/catalog"
)

// cloudCall is a call of a Chat Completions request body to model.
func cloudCall(t *testing.T, model, body string) *Call {
	t.Helper()
	req, err := ParseChatRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return &Call{Request: req, UpstreamModel: model, ResponseModel: "x/" + model, CredentialID: "cred-1", DefaultMaxTokens: 64000}
}

// A conversation with everything Gemini takes, in generateContent's own
// terms: the system prompt apart, roles user and model, an image inline,
// a function call with its thought signature returned, the function's
// response by name, tools, a forced function, a JSON schema, a thinking
// budget and what extra_body.google adds.
func TestTranslateGemini(t *testing.T) {
	call := cloudCall(t, "gemini-2.5-flash", `{"model":"m","messages":[
		{"role":"system","content":"Be brief."},
		{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]},
		{"role":"assistant","content":null,"tool_calls":[{"id":"gemsig_0_c2lnbmF0dXJl","type":"function","function":{"name":"lookup","arguments":"{\"q\":\"png\"}"}}]},
		{"role":"tool","tool_call_id":"gemsig_0_c2lnbmF0dXJl","content":"{\"found\":true}"}],
		"tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}}],
		"tool_choice":{"type":"function","function":{"name":"lookup"}},
		"response_format":{"type":"json_schema","json_schema":{"name":"o","schema":{"type":"object"}}},
		"reasoning_effort":"low","max_tokens":500,"temperature":0.2,"stop":["END"],
		"extra_body":{"google":{"cached_content":"cachedContents/abc","safety_settings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}],
			"thinking_config":{"thinking_budget":2048,"include_thoughts":true}}}}`)
	out, err := translateGemini(call, false)
	if err != nil {
		t.Fatal(err)
	}
	got := string(mustMarshal(out))
	for _, want := range []string{
		`"systemInstruction":{"parts":[{"text":"Be brief."}]}`,
		`{"role":"user","parts":[{"text":"what is this?"},{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}}]}`,
		`{"role":"model","parts":[{"thoughtSignature":"c2lnbmF0dXJl","functionCall":{"name":"lookup","args":{"q":"png"}}}]}`,
		`{"role":"user","parts":[{"functionResponse":{"name":"lookup","response":{"found":true}}}]}`,
		`"functionDeclarations":[{"name":"lookup","parametersJsonSchema":{"type":"object","properties":{"q":{"type":"string"}}}}]`,
		`"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["lookup"]}`,
		`"maxOutputTokens":500`, `"temperature":0.2`, `"stopSequences":["END"]`,
		`"responseMimeType":"application/json","responseJsonSchema":{"type":"object"}`,
		`"thinkingConfig":{"thinkingBudget":2048,"includeThoughts":true}`,
		`"safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}]`,
		`"cachedContent":"cachedContents/abc"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("generateContent request lacks %s:\n%s", want, got)
		}
	}
	for body, param := range map[string]string{
		`{"model":"m","n":2,"messages":[{"role":"user","content":"hi"}]}`:                                                         "n",
		`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x.example/cat"}}]}]}`: "messages[0].content[0].image_url.url",
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"reasoning_effort":"extreme"}`:                                  "reasoning_effort",
	} {
		_, err := translateGemini(cloudCall(t, "gemini-2.5-flash", body), false)
		if inv, ok := err.(*InvalidRequestError); !ok || inv.Param != param {
			t.Errorf("%s: %v, want a refusal of %s", body, err, param)
		}
	}
	strict := cloudCall(t, "gemini-2.5-flash", `{"model":"m","messages":[{"role":"user","content":"hi"}],"logit_bias":{"1":2}}`)
	if _, err := translateGemini(strict, true); err == nil {
		t.Error("strict: logit_bias dropped silently")
	}
}

// A generateContent answer, as the API sends it: thoughts apart, a
// function call, usage with the cache and the thoughts.
const geminiSample = `{"candidates":[{"content":{"role":"model","parts":[
	{"text":"Let me think.","thought":true},{"text":"It is a PNG."},
	{"functionCall":{"name":"lookup","args":{"q":"png"}},"thoughtSignature":"c2ln"}]},
	"finishReason":"STOP","index":0}],
	"usageMetadata":{"promptTokenCount":1300,"candidatesTokenCount":60,"totalTokenCount":1400,"cachedContentTokenCount":300,"thoughtsTokenCount":40},
	"modelVersion":"gemini-2.5-flash","responseId":"abc"}`

func TestGeminiCompletion(t *testing.T) {
	call := cloudCall(t, "gemini-2.5-flash", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	c, err := geminiCompletion(&http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(geminiSample))}, call)
	if err != nil {
		t.Fatal(err)
	}
	want := Usage{InputTokens: 1000, CacheReadTokens: 300, OutputTokens: 100, ReasoningTokens: 40, InputReported: true, OutputReported: true}
	if c.Usage != want {
		t.Fatalf("usage %+v, want %+v", c.Usage, want)
	}
	body := string(c.Body)
	for _, w := range []string{`"content":"It is a PNG."`, `"id":"gemsig_0_c2ln"`, `"arguments":"{\"q\":\"png\"}"`, `"finish_reason":"tool_calls"`,
		`"prompt_tokens":1300`, `"model":"x/gemini-2.5-flash"`,
		// The thoughts are output, and OpenAI's shape names them.
		`"completion_tokens":100`, `"completion_tokens_details":{"reasoning_tokens":40}`} {
		if !strings.Contains(body, w) {
			t.Errorf("answer lacks %s: %s", w, body)
		}
	}
	if strings.Contains(body, "Let me think") {
		t.Errorf("the thought is in the answer: %s", body)
	}
	// A prompt the safety filters blocked is the caller's 400, unbilled.
	blocked := `{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":8}}`
	_, err = geminiCompletion(&http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(blocked))}, call)
	if e, ok := err.(*Error); !ok || e.Kind != Rejected || e.Code != "content_filter" {
		t.Fatalf("blocked prompt: %v", err)
	}
}

func TestGoogleErrors(t *testing.T) {
	call := &Call{Secret: "AIzaSECRET", CredentialID: "cred-9"}
	for _, c := range []struct {
		status int
		body   string
		want   ErrorKind
	}{
		{400, `{"error":{"code":400,"message":"API key not valid (AIzaSECRET).","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}`, Unauthorized},
		{429, `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`, RateLimited},
		{503, `[{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}]`, Unavailable},
		{400, `{"error":{"code":400,"message":"* GenerateContentRequest.contents: contents is not specified","status":"INVALID_ARGUMENT"}}`, Rejected},
		{403, `{"error":{"code":403,"message":"Permission denied on resource project p.","status":"PERMISSION_DENIED"}}`, Unauthorized},
	} {
		e := googleStatusError(&http.Response{StatusCode: c.status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(c.body))}, call)
		if e.Kind != c.want || strings.Contains(e.Message, "AIzaSECRET") {
			t.Errorf("%d %s: %v, want %v", c.status, c.body, e, c.want)
		}
		if e.Kind == Unauthorized && !strings.Contains(e.Message, "cred-9") {
			t.Errorf("an auth failure does not name the credential: %v", e)
		}
	}
}

// A conversation in Converse's terms: system apart, content blocks, an
// image's format and bytes, a PDF document, tool use and results, tool
// specs, and Claude's thinking in additionalModelRequestFields.
func TestTranslateConverse(t *testing.T) {
	call := cloudCall(t, "global.anthropic.claude-sonnet-4-5-20250929-v1:0", `{"model":"m","messages":[
		{"role":"developer","content":"Be brief."},
		{"role":"user","content":[{"type":"text","text":"read"},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/"}},
			{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERi0=","filename":"a.pdf"}}]},
		{"role":"assistant","content":"","tool_calls":[{"id":"tooluse_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},
		{"role":"tool","tool_call_id":"tooluse_1","content":"done"}],
		"tools":[{"type":"function","function":{"name":"f","description":"does f","parameters":{"type":"object"}}}],
		"tool_choice":"required","reasoning_effort":"medium","max_completion_tokens":20000,"top_p":0.9}`)
	out, err := translateConverse(call, false)
	if err != nil {
		t.Fatal(err)
	}
	got := string(mustMarshal(out))
	for _, want := range []string{
		`"system":[{"text":"Be brief."}]`,
		`{"image":{"format":"jpeg","source":{"bytes":"/9j/"}}}`,
		`{"document":{"format":"pdf","name":"document-3","source":{"bytes":"JVBERi0="}}}`,
		`{"role":"assistant","content":[{"toolUse":{"toolUseId":"tooluse_1","name":"f","input":{"a":1}}}]}`,
		`{"toolResult":{"toolUseId":"tooluse_1","content":[{"text":"done"}]}}`,
		`"tools":[{"toolSpec":{"name":"f","description":"does f","inputSchema":{"json":{"type":"object"}}}}],"toolChoice":{"any":{}}`,
		`"inferenceConfig":{"maxTokens":20000,"topP":0.9}`,
		`"additionalModelRequestFields":{"thinking":{"type":"enabled","budget_tokens":8192}}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Converse request lacks %s:\n%s", want, got)
		}
	}
	structured := cloudCall(t, "us.amazon.nova-lite-v1:0", `{"model":"m","messages":[{"role":"user","content":"hi"}],
		"response_format":{"type":"json_schema","json_schema":{"name":"o","schema":{"type":"object","properties":{"a":{"type":"string"}}}}}}`)
	out, err = translateConverse(structured, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(mustMarshal(out.ToolConfig)); !strings.Contains(got, `"name":"gw_structured_output"`) || !strings.Contains(got, `"toolChoice":{"tool":{"name":"gw_structured_output"}}`) {
		t.Errorf("structured output: %s", got)
	}
	for body, param := range map[string]string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"reasoning_effort":"low"}`:                                                                       "reasoning_effort",
		`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x.example/cat.png"}}]}]}`:                              "messages[0].content[0].image_url.url",
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"response_format":{"type":"json_object"}}`: "response_format",
	} {
		_, err := translateConverse(cloudCall(t, "us.amazon.nova-lite-v1:0", body), false)
		if inv, ok := err.(*InvalidRequestError); !ok || inv.Param != param {
			t.Errorf("%s: %v, want a refusal of %s", body, err, param)
		}
	}
}

// A Converse answer as Bedrock sends it.
const converseSample = `{"output":{"message":{"role":"assistant","content":[
	{"reasoningContent":{"reasoningText":{"text":"thinking it over","signature":"sig"}}},
	{"text":"Paris."},{"toolUse":{"toolUseId":"tooluse_x","name":"f","input":{"city":"Paris"}}}]}},
	"stopReason":"tool_use","usage":{"inputTokens":1000,"outputTokens":100,"totalTokens":1600,"cacheReadInputTokens":300,"cacheWriteInputTokens":200},
	"metrics":{"latencyMs":812}}`

func TestConverseCompletion(t *testing.T) {
	call := cloudCall(t, "us.amazon.nova-lite-v1:0", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	c, err := converseCompletion(&http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(converseSample))}, call)
	if err != nil {
		t.Fatal(err)
	}
	u := c.Usage
	if u.InputTokens != 1000 || u.OutputTokens != 100 || u.CacheReadTokens != 300 || u.CacheWriteTokens != 200 || u.Estimated ||
		u.ReasoningTokens <= 0 || u.ReasoningTokens >= 100 {
		t.Fatalf("usage %+v", u)
	}
	body := string(c.Body)
	for _, w := range []string{`"content":"Paris."`, `"id":"tooluse_x"`, `"finish_reason":"tool_calls"`, `"prompt_tokens":1500`} {
		if !strings.Contains(body, w) {
			t.Errorf("answer lacks %s: %s", w, body)
		}
	}
}

// eventStream encodes events (type, payload) as Bedrock's event stream.
func eventStream(t testing.TB, events ...[2]string) io.ReadCloser {
	var buf bytes.Buffer
	enc := eventstream.NewEncoder()
	for _, ev := range events {
		h := eventstream.Headers{{Name: ":message-type", Value: eventstream.StringValue("event")},
			{Name: ":event-type", Value: eventstream.StringValue(ev[0])}}
		if strings.HasSuffix(ev[0], "Exception") {
			h = eventstream.Headers{{Name: ":message-type", Value: eventstream.StringValue("exception")},
				{Name: ":exception-type", Value: eventstream.StringValue(ev[0])}}
		}
		if err := enc.Encode(&buf, eventstream.Message{Headers: h, Payload: []byte(ev[1])}); err != nil {
			t.Fatal(err)
		}
	}
	return io.NopCloser(&buf)
}

func TestConverseStream(t *testing.T) {
	call := cloudCall(t, "us.amazon.nova-lite-v1:0", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`)
	s := newConverseStream(eventStream(t,
		[2]string{"messageStart", `{"role":"assistant"}`},
		[2]string{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Par"}}`},
		[2]string{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"is."}}`},
		[2]string{"contentBlockStop", `{"contentBlockIndex":0}`},
		[2]string{"contentBlockStart", `{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"tooluse_y","name":"f"}}}`},
		[2]string{"contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"city\":"}}}`},
		[2]string{"contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":"\"Paris\"}"}}}`},
		[2]string{"contentBlockStop", `{"contentBlockIndex":1}`},
		[2]string{"messageStop", `{"stopReason":"tool_use"}`},
		[2]string{"metadata", `{"usage":{"inputTokens":20,"outputTokens":9,"totalTokens":29},"metrics":{"latencyMs":100}}`},
	), call)
	var all strings.Builder
	for {
		b, err := s.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
		all.WriteByte('\n')
	}
	got := all.String()
	for _, w := range []string{`"role":"assistant"`, `"content":"Par"`, `"id":"tooluse_y"`, `"arguments":"\"Paris\"}"`, `"finish_reason":"tool_calls"`,
		`"usage":{"prompt_tokens":20,"completion_tokens":9`} {
		if !strings.Contains(got, w) {
			t.Errorf("stream lacks %s:\n%s", w, got)
		}
	}
	if u := s.Usage(); u.InputTokens != 20 || u.OutputTokens != 9 || u.Estimated {
		t.Errorf("usage %+v", u)
	}

	// A throttling exception mid-stream is a rate limit; a stream that
	// ends before messageStop was cut.
	s = newConverseStream(eventStream(t, [2]string{"messageStart", `{"role":"assistant"}`},
		[2]string{"throttlingException", `{"message":"Too many tokens, please wait before trying again."}`}), call)
	_, _ = s.Recv()
	if _, err := s.Recv(); !isKind(err, RateLimited) {
		t.Errorf("throttling: %v", err)
	}
	s = newConverseStream(eventStream(t, [2]string{"messageStart", `{"role":"assistant"}`},
		[2]string{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Par"}}`}), call)
	_, _ = s.Recv()
	_, _ = s.Recv()
	if _, err := s.Recv(); !isKind(err, Unavailable) || !strings.Contains(err.Error(), "messageStop") {
		t.Errorf("cut stream: %v", err)
	}
	if u := s.Usage(); !u.Estimated || u.OutputTokens == 0 {
		t.Errorf("a cut stream's usage is counted: %+v", u)
	}
}

func isKind(err error, k ErrorKind) bool {
	e, ok := err.(*Error)
	return ok && e.Kind == k
}

func TestBedrockAddresses(t *testing.T) {
	if got := awsPathEscape("global.anthropic.claude-haiku-4-5-20251001-v1:0"); got != "global.anthropic.claude-haiku-4-5-20251001-v1%3A0" {
		t.Errorf("escaped %s", got)
	}
	if got := awsPathEscape("arn:aws:bedrock:us-east-1:123:inference-profile/us.x"); got != "arn%3Aaws%3Abedrock%3Aus-east-1%3A123%3Ainference-profile%2Fus.x" {
		t.Errorf("escaped %s", got)
	}
	for base, want := range map[string]string{
		"https://bedrock-runtime.us-east-1.amazonaws.com":      "https://bedrock-runtime.eu-central-1.amazonaws.com",
		"https://bedrock-runtime-fips.us-east-1.amazonaws.com": "https://bedrock-runtime-fips.eu-central-1.amazonaws.com",
		"https://vpce-1.bedrock-runtime.vpce.amazonaws.com/":   "https://vpce-1.bedrock-runtime.vpce.amazonaws.com",
	} {
		if got := bedrockBase(&Call{BaseURL: base, Settings: Settings{Region: "eu-central-1"}}); got != want {
			t.Errorf("%s: %s, want %s", base, got, want)
		}
	}
	for errType, want := range map[string]ErrorKind{
		"ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/": RateLimited,
		"AccessDeniedException": Unauthorized, "UnrecognizedClientException": Unauthorized, "ExpiredTokenException": Unauthorized,
		"ServiceUnavailableException": Unavailable, "ModelErrorException": Unavailable, "ModelTimeoutException": Timeout,
		"ValidationException": Rejected, "modelStreamErrorException": Unavailable,
	} {
		if got := bedrockErrorKind(errType, 0); got != want {
			t.Errorf("%s: %v, want %v", errType, got, want)
		}
	}
}

func TestVertexAndAzureAddresses(t *testing.T) {
	call := &Call{BaseURL: "https://aiplatform.googleapis.com/v1", UpstreamModel: "gemini-2.5-flash", Settings: Settings{Location: "europe-west4"}}
	if got := vertexModelURL(call, "proj-1", "google"); got != "https://europe-west4-aiplatform.googleapis.com/v1/projects/proj-1/locations/europe-west4/publishers/google/models/gemini-2.5-flash" {
		t.Errorf("regional: %s", got)
	}
	call.Settings = Settings{Location: "global", Project: "other"}
	call.UpstreamModel = "claude-sonnet-4-5@20250929"
	if got := vertexModelURL(call, "proj-1", "anthropic"); got != "https://aiplatform.googleapis.com/v1/projects/other/locations/global/publishers/anthropic/models/claude-sonnet-4-5@20250929" {
		t.Errorf("global: %s", got)
	}
	az := &Call{BaseURL: "https://r.openai.azure.com/", UpstreamModel: "gpt-4o", Settings: Settings{Deployments: map[string]string{"gpt-4o": "prod-4o"}}}
	if got := azureDeploymentURL(az, "/chat/completions"); got != "https://r.openai.azure.com/openai/deployments/prod-4o/chat/completions?api-version=2024-10-21" {
		t.Errorf("azure: %s", got)
	}
	filtered := `{"choices":[{"index":0,"finish_reason":"content_filter","message":{"role":"assistant","content":null},
		"content_filter_results":{"hate":{"filtered":true,"severity":"high"}}}],"usage":{"prompt_tokens":10,"completion_tokens":5}}`
	if !answerFiltered([]byte(filtered)) || answerFiltered([]byte(`{"choices":[{"finish_reason":"stop","content_filter_results":{}}]}`)) {
		t.Error("content filter detection")
	}
	// A prompt Azure's filters refuse is the caller's 400 content_filter.
	promptFiltered := `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
		"type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation"}}}`
	e := openAIStatusError(&http.Response{StatusCode: 400, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(promptFiltered))}, "k")
	if e.Kind != Rejected || e.Code != "content_filter" {
		t.Errorf("prompt filter: %+v", e)
	}
}

func TestCredentialChecks(t *testing.T) {
	sa, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": "p", "client_email": "a@p.iam.gserviceaccount.com",
		"private_key": "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n"})
	for _, c := range []struct {
		kind   catalog.Kind
		secret string
		ok     bool
	}{
		{catalog.KindBedrock, `{"access_key_id":"AKIA","secret_access_key":"s"}`, true},
		{catalog.KindBedrock, `{"access_key_id":"AKIA","secret_access_key":"s","session_token":"t"}`, true},
		{catalog.KindBedrock, `{"access_key_id":"AKIA"}`, false},
		{catalog.KindBedrock, `{"access_key_id":"AKIA","secret_access_key":"s","region":"us-east-1"}`, false},
		{catalog.KindVertex, string(sa), false},
		{catalog.KindVertex, "not json", false},
		{catalog.KindAzureOpenAI, "0123456789abcdef", true},
		{catalog.KindAzureOpenAI, `{"tenant_id":"t","client_id":"c","client_secret":"s"}`, true},
		{catalog.KindAzureOpenAI, `{"tenant_id":"t"}`, false},
		{catalog.KindGemini, "AIza", true},
	} {
		problems := CheckSecret(c.kind, c.secret)
		if (len(problems) == 0) != c.ok {
			t.Errorf("%s %s: %v", c.kind, c.secret, problems)
		}
		for _, p := range problems {
			if strings.Contains(p.Message, `"s"`) || strings.Contains(p.Message, "not a key") {
				t.Errorf("a problem quotes the secret: %s", p.Message)
			}
		}
	}
	if p := CheckSettings(catalog.KindVertex, Settings{Location: "us-east5", Region: "us-east-1"}); len(p) != 1 || p[0].Field != "settings.region" {
		t.Errorf("vertex with a region: %v", p)
	}
	if p := CheckSettings(catalog.KindAzureOpenAI, Settings{APIVersion: "2025-04-01-preview", Deployments: map[string]string{"gpt-4o": "prod-4o"}}); len(p) != 0 {
		t.Errorf("azure: %v", p)
	}
}
