package web

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

func testHandler() http.Handler {
	return Handler(slog.New(slog.NewTextHandler(io.Discard, nil)), func(*http.Request) (bool, error) { return true, nil })
}

// get fetches path from the pages, optionally with a session cookie.
func get(t *testing.T, h http.Handler, path string, session bool) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	if session {
		req.AddCookie(&http.Cookie{Name: "svc_session", Value: "sess_x"})
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func checkSecurityHeaders(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	want := map[string]string{
		"Content-Type":            "text/html; charset=utf-8",
		"Cache-Control":           "no-store",
		"X-Frame-Options":         "DENY",
		"Referrer-Policy":         "no-referrer",
		"X-Content-Type-Options":  "nosniff",
		"Content-Security-Policy": "default-src 'self'; script-src 'unsafe-inline' 'self'; style-src 'unsafe-inline'; frame-ancestors 'none'",
	}
	for k, v := range want {
		if got := rec.Header().Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

// Every page talks to the API only with the CSRF header and loads nothing
// from elsewhere.
func checkPageBasics(t *testing.T, body string) {
	t.Helper()
	if !strings.Contains(body, `"X-Requested-With": "XMLHttpRequest"`) {
		t.Error("page lacks the X-Requested-With header in its API calls")
	}
	for _, bad := range []string{"http://", "https://", "<no value>", " src="} {
		if strings.Contains(body, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
}

func TestSigninPage(t *testing.T) {
	h := testHandler()
	rec := get(t, h, "/signin?next=%2Fcli%2Fauthorize%3Fcode%3DBCDF-GHJK", false)
	body := rec.Body.String()
	if rec.Code != 200 {
		t.Fatalf("signin: %d", rec.Code)
	}
	checkSecurityHeaders(t, rec)
	checkPageBasics(t, body)
	for _, want := range []string{
		`data-next="/cli/authorize?code=BCDF-GHJK"`,
		`"/api/v1/auth/login"`,
		`type="password"`,
		`href="/signup?next=%2Fcli%2Fauthorize%3Fcode%3DBCDF-GHJK"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("signin page lacks %s", want)
		}
	}
	// A next that leaves the site is replaced by the home page.
	for _, next := range []string{"https://evil.example/", "//evil.example/x", "/\\evil.example", "javascript:alert(1)", "evil"} {
		rec := get(t, h, "/signin?next="+url.QueryEscape(next), false)
		if !strings.Contains(rec.Body.String(), `data-next="/"`) {
			t.Errorf("next %q was not replaced by /", next)
		}
	}
}

func TestSafeNext(t *testing.T) {
	cases := map[string]string{
		"":                              "/",
		"/":                             "/",
		"/cli/authorize?code=A":         "/cli/authorize?code=A",
		"/a/b?x=1#f":                    "/a/b?x=1#f",
		"//evil.example":                "/",
		"/\\evil.example":               "/",
		"/a\\b":                         "/",
		"https://evil.example/":         "/",
		"HTTPS://evil.example/":         "/",
		"javascript:alert(1)":           "/",
		"relative/path":                 "/",
		"/line\nbreak":                  "/",
		"/tab\there":                    "/",
		"/" + strings.Repeat("a", 3000): "/",
	}
	for in, want := range cases {
		if got := SafeNext(in); got != want {
			t.Errorf("SafeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSignupPage(t *testing.T) {
	rec := get(t, testHandler(), "/signup?next=/cli/authorize%3Fcode%3DBCDF-GHJK", false)
	body := rec.Body.String()
	if rec.Code != 200 {
		t.Fatalf("signup: %d", rec.Code)
	}
	checkSecurityHeaders(t, rec)
	checkPageBasics(t, body)
	for _, want := range []string{
		`"/api/v1/auth/signup"`,
		`data-next="/cli/authorize?code=BCDF-GHJK"`,
		// A 403 (sign-up disabled) replaces the form with an explanation.
		`res.status === 403`,
		`Sign-up is closed`,
		`href="/signin?next=%2Fcli%2Fauthorize%3Fcode%3DBCDF-GHJK"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("signup page lacks %s", want)
		}
	}
}

func TestAuthorizePage(t *testing.T) {
	h := testHandler()
	t.Run("signed out redirects to sign-in and back", func(t *testing.T) {
		rec := get(t, h, "/cli/authorize?code=BCDF-GHJK", false)
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("status %d", rec.Code)
		}
		loc := rec.Header().Get("Location")
		u, err := url.Parse(loc)
		if err != nil || u.Path != "/signin" || u.Query().Get("next") != "/cli/authorize?code=BCDF-GHJK" {
			t.Fatalf("Location %q", loc)
		}
	})
	t.Run("signed in shows the code and the scope picker", func(t *testing.T) {
		rec := get(t, h, "/cli/authorize?code=bcdfghjk&org=acme&workspace=research", true)
		body := rec.Body.String()
		if rec.Code != 200 {
			t.Fatalf("status %d", rec.Code)
		}
		checkSecurityHeaders(t, rec)
		checkPageBasics(t, body)
		for _, want := range []string{
			`data-code="BCDF-GHJK"`,
			`<div class="code" id="code">BCDF-GHJK</div>`,
			`data-org="acme"`,
			`data-workspace="research"`,
			`"/api/v1/auth/cli/authorizations/"`,
			`"/api/v1/enrollment/choices"`,
			`"/api/v1/auth/cli/approve"`,
			`"/api/v1/auth/cli/deny"`,
			`<select id="org"`,
			`<select id="workspace"`,
			`You can close this window and return to the terminal.`,
			`res.status === 409`,
			`This code has expired.`,
			`data-signin="/signin?next=%2Fcli%2Fauthorize%3Fcode%3Dbcdfghjk%26org%3Dacme%26workspace%3Dresearch"`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("authorize page lacks %s", want)
			}
		}
	})
	t.Run("no code asks for one", func(t *testing.T) {
		body := get(t, h, "/cli/authorize", true).Body.String()
		if !strings.Contains(body, `name="code"`) || strings.Contains(body, `id="decide"`) {
			t.Fatalf("code form missing:\n%s", body)
		}
	})
	t.Run("malformed code is refused, not used", func(t *testing.T) {
		body := get(t, h, "/cli/authorize?code="+url.QueryEscape(`"><script>x</script>`), true).Body.String()
		if !strings.Contains(body, "is not a sign-in code") || strings.Contains(body, "<script>x") || strings.Contains(body, `id="decide"`) {
			t.Fatalf("bad code:\n%s", body)
		}
	})
	t.Run("hints are escaped", func(t *testing.T) {
		body := get(t, h, "/cli/authorize?code=BCDF-GHJK&org="+url.QueryEscape(`"><b>`), true).Body.String()
		if strings.Contains(body, `"><b>`) || !strings.Contains(body, `data-org="&#34;&gt;&lt;b&gt;"`) {
			t.Fatalf("org hint not escaped")
		}
	})
}

func TestNormalizeCode(t *testing.T) {
	for in, want := range map[string]string{"BCDF-GHJK": "BCDF-GHJK", "bcdfghjk": "BCDF-GHJK", "bcdf-ghjk": "BCDF-GHJK"} {
		if got, ok := normalizeCode(in); !ok || got != want {
			t.Errorf("normalizeCode(%q) = %q %v", in, got, ok)
		}
	}
	for _, in := range []string{"BCDF-GHJ", "BCDF-GHJKL", "BCDF-GH1K", "BCDF GHJK", "ÄBCD-GHJK"} {
		if _, ok := normalizeCode(in); ok {
			t.Errorf("normalizeCode(%q) accepted", in)
		}
	}
}

func TestIndexAndUnknownPages(t *testing.T) {
	h := testHandler()
	rec := get(t, h, "/", false)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `href="/signin"`) {
		t.Fatalf("index: %d", rec.Code)
	}
	checkSecurityHeaders(t, rec)
	if rec := get(t, h, "/nope", false); rec.Code != 404 {
		t.Fatalf("unknown page: %d", rec.Code)
	}
}

// TestPageScriptsParse checks every page's inline scripts with node, when
// it is installed: a syntax error would leave a page's forms without
// their handlers, which no other unit test notices.
func TestPageScriptsParse(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	h := testHandler()
	scriptRE := regexp.MustCompile(`(?s)<script>(.*?)</script>`)
	for _, path := range []string{"/", "/setup", "/signin", "/signup", "/cli/authorize", "/cli/authorize?code=BCDF-GHJK"} {
		body := get(t, h, path, true).Body.String()
		var js strings.Builder
		for _, m := range scriptRE.FindAllStringSubmatch(body, -1) {
			// One file, as the page's scripts share one global scope.
			js.WriteString(m[1] + "\n;\n")
		}
		file := filepath.Join(t.TempDir(), "page.js")
		if err := os.WriteFile(file, []byte(js.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(node, "--check", file).CombinedOutput(); err != nil {
			t.Errorf("%s: scripts do not parse: %v\n%s", path, err, out)
		}
	}
}

func TestPlaygroundPage(t *testing.T) {
	h := testHandler()
	rec := get(t, h, "/playground", false)
	if loc := rec.Header().Get("Location"); rec.Code != http.StatusSeeOther || loc != "/signin?next=%2Fplayground" {
		t.Fatalf("signed out: %d %q", rec.Code, loc)
	}
	rec = get(t, h, "/playground", true)
	if rec.Code != 200 {
		t.Fatalf("status %d", rec.Code)
	}
	checkSecurityHeaders(t, rec)
	body := rec.Body.String()
	checkPageBasics(t, body)
	for _, want := range []string{
		`<select id="org"`, `<select id="workspace"`, `<select id="model"`,
		`"/playground"`, `"/chat/completions"`, `stream_options: {include_usage: true}`,
		`": gw-cost-usd "`, `data-signin="/signin?next=%2Fplayground"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("playground page lacks %s", want)
		}
	}
}

// TestSigninPageOffersProviders: each identity provider is a link to its
// start, returning where the person was going.
func TestSigninPageOffersProviders(t *testing.T) {
	h := HandlerWithSSO(slog.New(slog.NewTextHandler(io.Discard, nil)), func(*http.Request) (bool, error) { return true, nil },
		func(*http.Request) []string { return []string{"okta", "entra"} })
	rec := get(t, h, "/signin?next=%2Fcli%2Fauthorize%3Fcode%3DBCDF-GHJK", false)
	body := rec.Body.String()
	for _, want := range []string{
		`id="sso-okta" href="/api/v1/auth/oidc/okta/start?return_to=%2Fcli%2Fauthorize%3Fcode%3DBCDF-GHJK"`,
		`Sign in with entra`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("signin page lacks %s:\n%s", want, body)
		}
	}
	if rec := get(t, testHandler(), "/signin", false); strings.Contains(rec.Body.String(), `id="sso`) {
		t.Error("a sign-in page without providers offers one")
	}
}
