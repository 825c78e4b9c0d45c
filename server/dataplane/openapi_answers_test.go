package dataplane_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/openapitest"
)

// answers records every exchange of the data planes newInfEnv serves, so
// that TestMain can hold the data plane's OpenAPI document to what they
// really answered (issue 26, row 13).
var answers = &openapitest.Recorder{}

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		code = checkAnswers()
	}
	os.Exit(code)
}

// checkAnswers validates the recorded answers of the documented paths
// against the document; when the whole package ran, every operation must
// have been answered with a 2xx at least once.
func checkAnswers() int {
	rec := httptest.NewRecorder()
	dataplane.NewPlane(nil, dataplane.Options{}).ServeHTTP(rec, httptest.NewRequest("GET", "/inf/v1/openapi.json", nil))
	doc := rec.Body.Bytes()
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		fmt.Fprintln(os.Stderr, "data plane document:", err)
		return 1
	}
	var operations []string
	for path, ops := range d.Paths {
		for method := range ops {
			operations = append(operations, strings.ToUpper(method)+" "+path)
		}
	}
	sort.Strings(operations)
	// A model id may hold slashes: every path under /inf/v1/models/ is
	// the one operation. Paths no endpoint serves are not the document's.
	var recorded []openapitest.Exchange
	for _, x := range answers.Exchanges() {
		switch {
		case strings.HasPrefix(x.Path, "/inf/v1/models/"):
			x.Path = "/inf/v1/models/{model_id}"
		case strings.HasPrefix(x.Path, "/inf/v1/mcp/"):
			x.Path = "/inf/v1/mcp/{server}"
		case strings.HasPrefix(x.Path, "/inf/v1/files/"):
			if strings.HasSuffix(x.Path, "/content") {
				x.Path = "/inf/v1/files/{file_id}/content"
			} else {
				x.Path = "/inf/v1/files/{file_id}"
			}
		case strings.HasPrefix(x.Path, "/inf/v1/messages/batches/"):
			sub := ""
			for _, s := range []string{"/cancel", "/results"} {
				if strings.HasSuffix(x.Path, s) {
					sub = s
				}
			}
			x.Path = "/inf/v1/messages/batches/{message_batch_id}" + sub
		case strings.HasPrefix(x.Path, "/inf/v1/batches/"):
			if strings.HasSuffix(x.Path, "/cancel") {
				x.Path = "/inf/v1/batches/{batch_id}/cancel"
			} else {
				x.Path = "/inf/v1/batches/{batch_id}"
			}
		}
		// A method the path does not answer (405) is no operation.
		if _, ok := d.Paths[x.Path][strings.ToLower(x.Method)]; !ok {
			continue
		}
		recorded = append(recorded, x)
	}
	if len(recorded) == 0 {
		return 0
	}
	problems, err := openapitest.Check(doc, recorded)
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
	fmt.Fprintf(os.Stderr, "--- FAIL: the data plane's OpenAPI document does not describe %d kinds of recorded answers (of %d answers):\n", len(problems), len(recorded))
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "    "+p)
	}
	return 1
}
