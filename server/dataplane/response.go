package dataplane

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// response is an HTTP response encoded once and written many times: the
// model objects and lists at admission, the constant errors at start.
type response struct {
	status int
	body   []byte
	// header holds the response's header values. They are shared between
	// requests and put into each response's header map as they are, which
	// saves an allocation per header per request; nothing downstream edits
	// a value slice in place.
	header []headerField
	// code is the error code of an error response, which a usage event
	// keeps as the reason a request was refused.
	code string
	// billing marks a final budget refusal, which Anthropic's dialect
	// answers as its billing_error.
	billing bool
}

type headerField struct {
	name  string // canonical form
	value []string
}

// Header values every data-plane response carries. Discovery answers
// depend on the key and on admissions that may land any second, so no
// cache may keep them (spec 4.9 rule 7).
var (
	contentTypeJSON = []string{"application/json"}
	noStore         = []string{"no-store"}
)

func newResponse(status int, body []byte, extra ...headerField) *response {
	h := append([]headerField{
		{"Content-Type", contentTypeJSON},
		{"Cache-Control", noStore},
		{"Content-Length", []string{strconv.Itoa(len(body))}},
	}, extra...)
	return &response{status: status, body: body, header: h}
}

func (r *response) write(w http.ResponseWriter) {
	h := w.Header()
	for _, f := range r.header {
		h[f.name] = f.value
	}
	w.WriteHeader(r.status)
	_, _ = w.Write(r.body) // a client gone mid-write is not ours to report
}

// mustJSON encodes values whose encoding cannot fail (plain structs of
// strings, numbers and slices); a failure is a programming error.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("dataplane: encoding a response: " + err.Error())
	}
	return b
}
