package api_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/openapitest"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/wire"
)

// answers records every exchange of every test server newEnv starts, so
// that TestMain can hold the OpenAPI document to what the API really
// answered (issue 26, row 13): each answer's status, content type and body
// must be the document's for its operation.
var answers = &openapitest.Recorder{Path: func(r *http.Request) string {
	// The mux sets the pattern on the request it served; a request no
	// route took (404, 405) reached no documented operation.
	_, path, ok := strings.Cut(r.Pattern, " ")
	if !ok {
		return ""
	}
	return strings.ReplaceAll(path, "...}", "}")
}}

var (
	documentOnce sync.Once
	document     []byte
	operations   []string
)

// recordAnswers wraps the API's handler in the recorder; the first server
// built also renders the document (the route table is the same for all).
func recordAnswers(s *api.Server) http.Handler {
	documentOnce.Do(func() {
		document, _ = json.Marshal(s.OpenAPI())
		for _, rt := range s.Routes() {
			operations = append(operations, rt.Method+" "+rt.DocPath())
		}
		sort.Strings(operations)
	})
	return answers.Wrap(s)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 && document != nil {
		code = checkAnswers()
	}
	os.Exit(code)
}

// checkAnswers validates the recorded answers against the document. When
// the whole package ran, every operation must also have been answered with
// a 2xx at least once, so no operation escapes the check.
func checkAnswers() int {
	recorded := answers.Exchanges()
	problems, err := openapitest.Check(document, recorded)
	if err != nil {
		fmt.Fprintln(os.Stderr, "openapi answers:", err)
		return 1
	}
	if run := flag.Lookup("test.run"); run != nil && run.Value.String() == "" && !testing.Short() {
		for _, op := range openapitest.Uncovered(operations, recorded) {
			problems = append(problems, op+": no test received a 2xx answer of it to check against the document")
		}
	}
	if len(problems) == 0 {
		return 0
	}
	fmt.Fprintf(os.Stderr, "--- FAIL: the OpenAPI document does not describe %d kinds of recorded answers (of %d answers):\n", len(problems), len(recorded))
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "    "+p)
	}
	return 1
}

// TestRoutesOtherTestsLeaveUnanswered calls, with answers to check, the
// operations no other test of the package answers with a 2xx, so that
// every operation's answer meets the document (checkAnswers).
func TestRoutesOtherTestsLeaveUnanswered(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		const org = "/api/v1/organizations/default"
		e.must("GET", "/api/v1/bootstrap", "", nil)
		e.must("GET", wsBase+"/catalog", e.ownerKey, nil)

		e.must("POST", "/api/v1/instance/catalog/providers", e.ownerKey,
			map[string]any{"id": "local", "name": "Local", "kind": "openai-compatible", "base_url": "http://127.0.0.1:11434/v1"})
		e.must("DELETE", "/api/v1/instance/catalog/providers/local", e.ownerKey, nil)

		for _, prefix := range []string{"/api/v1/instance", wsBase} {
			cred := decodeData[wire.ProviderCredential](t, e.must("POST", prefix+"/provider-credentials", e.ownerKey,
				map[string]any{"provider": "openai", "label": "spare", "secret": "sk-spare-secret"}))
			e.must("DELETE", prefix+"/provider-credentials/"+cred.ID.String(), e.ownerKey, nil)
		}

		const aliases = wsBase + "/model-aliases"
		e.must("POST", aliases, e.ownerKey, map[string]any{"name": "gpt-5", "targets": []any{map[string]any{"model": "openai/gpt-4o-mini"}}})
		e.must("GET", aliases+"/gpt-5", e.ownerKey, nil)
		e.must("PATCH", aliases+"/gpt-5", e.ownerKey, map[string]any{"targets": []any{map[string]any{"model": "openai/gpt-4o", "weight": 2}}})
		e.must("DELETE", aliases+"/gpt-5", e.ownerKey, nil)
		e.must("GET", org+"/model-aliases", e.ownerKey, nil)

		dp, err := secrets.GenerateDataPlaneKey()
		if err != nil {
			t.Fatal(err)
		}
		e.must("POST", "/api/v1/data-plane/enrollments", e.ownerKey, map[string]any{"id": "dp-doc", "public_key": dp.Public().String()})
		e.must("GET", "/api/v1/instance/data-planes/enrollments/dp-doc", e.ownerKey, nil)
	})
}
