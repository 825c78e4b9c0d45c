package web

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestSetupPage(t *testing.T) {
	bootstrapped := false
	h := Handler(slog.New(slog.NewTextHandler(io.Discard, nil)), func(*http.Request) (bool, error) { return bootstrapped, nil })
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/setup?token=setup_abc%22%3E", nil))
		return rec.Code, rec.Body.String()
	}
	code, body := get()
	if code != 200 || !strings.Contains(body, `value="setup_abc&#34;&gt;"`) || !strings.Contains(body, `"X-Requested-With": "XMLHttpRequest"`) {
		t.Fatalf("fresh instance: %d\n%s", code, body)
	}
	bootstrapped = true
	if _, body := get(); !strings.Contains(body, "already has an owner") || strings.Contains(body, "<form") {
		t.Fatalf("bootstrapped instance:\n%s", body)
	}
	h = Handler(slog.New(slog.NewTextHandler(io.Discard, nil)), func(*http.Request) (bool, error) { return false, errors.New("db down") })
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/setup", nil))
	if rec.Code != 500 {
		t.Fatalf("state error: %d", rec.Code)
	}
}
