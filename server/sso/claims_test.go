package sso

import (
	"errors"
	"strings"
	"testing"
)

func TestReadClaims(t *testing.T) {
	names := ClaimNames{Email: "email", Name: "name", Groups: "groups"}
	base := func() map[string]any {
		return map[string]any{"sub": "s1", "nonce": "n1", "email": "Ada@Example.com", "email_verified": true, "name": "Ada",
			"groups": []any{"eng", 3, "ops"}}
	}
	cases := []struct {
		name   string
		change func(map[string]any)
		want   Expect
		reason string
	}{
		{"ok", func(map[string]any) {}, Expect{Nonce: "n1", Claims: names, Domains: []string{"example.com"}}, ""},
		{"nonce differs", func(c map[string]any) { c["nonce"] = "n2" }, Expect{Nonce: "n1", Claims: names}, "nonce_mismatch"},
		{"nonce missing", func(c map[string]any) { delete(c, "nonce") }, Expect{Nonce: "n1", Claims: names}, "nonce_mismatch"},
		{"no expected nonce", func(map[string]any) {}, Expect{Claims: names}, "nonce_mismatch"},
		{"no subject", func(c map[string]any) { delete(c, "sub") }, Expect{Nonce: "n1", Claims: names}, "no_subject"},
		{"no email", func(c map[string]any) { delete(c, "email") }, Expect{Nonce: "n1", Claims: names}, "no_email"},
		{"email not an email", func(c map[string]any) { c["email"] = "ada" }, Expect{Nonce: "n1", Claims: names}, "no_email"},
		{"unverified", func(c map[string]any) { c["email_verified"] = false }, Expect{Nonce: "n1", Claims: names}, "email_unverified"},
		{"unverified as a string", func(c map[string]any) { c["email_verified"] = "false" }, Expect{Nonce: "n1", Claims: names}, "email_unverified"},
		{"verified absent", func(c map[string]any) { delete(c, "email_verified") }, Expect{Nonce: "n1", Claims: names}, ""},
		{"other domain", func(map[string]any) {}, Expect{Nonce: "n1", Claims: names, Domains: []string{"corp.example"}}, "email_domain"},
		{"subdomain is another domain", func(c map[string]any) { c["email"] = "a@eu.example.com" }, Expect{Nonce: "n1", Claims: names, Domains: []string{"example.com"}}, "email_domain"},
		{"email from another claim", func(c map[string]any) { c["upn"] = "b@example.com"; delete(c, "email") },
			Expect{Nonce: "n1", Claims: ClaimNames{Email: "upn", Name: "name", Groups: "groups"}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.change(c)
			id, err := ReadClaims(c, tc.want)
			var r *Refusal
			switch {
			case tc.reason == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.reason != "" && (!errors.As(err, &r) || r.Reason != tc.reason):
				t.Fatalf("want %s, got %v", tc.reason, err)
			case tc.reason == "" && (id.Subject != "s1" || !strings.HasSuffix(id.Email, "@example.com") || strings.Join(id.Groups, ",") != "eng,ops"):
				t.Fatalf("identity: %+v", id)
			}
		})
	}
}

func TestReturnTo(t *testing.T) {
	const pub = "https://gw.example.com"
	cases := []struct {
		raw, want string
		ok        bool
	}{
		{"", "/", true},
		{"/cli/authorize?code=ABCD-EFGH", "/cli/authorize?code=ABCD-EFGH", true},
		{"https://gw.example.com/playground?x=1", "/playground?x=1", true},
		{"https://GW.example.com/", "/", true},
		{"https://evil.example/", "", false},
		{"http://gw.example.com/", "", false},
		{"https://gw.example.com.evil.example/", "", false},
		{"//evil.example/", "", false},
		{"/\\evil.example", "", false},
		{"javascript:alert(1)", "", false},
		{"relative/path", "", false},
		{"/a\nb", "", false},
		{"https://user@gw.example.com/", "", false},
		{"/x#frag", "", false},
	}
	for _, c := range cases {
		got, ok := ReturnTo(c.raw, pub)
		if got != c.want || ok != c.ok {
			t.Errorf("ReturnTo(%q) = %q %v, want %q %v", c.raw, got, ok, c.want, c.ok)
		}
	}
}

// FuzzReturnTo: whatever a link carries, an accepted return_to is a path
// of this site that a browser cannot read as another host.
func FuzzReturnTo(f *testing.F) {
	for _, s := range []string{"/", "//x", "/\\x", "https://gw.example.com/a", "https://x/", "/%2F%2Fx", "\t/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, ok := ReturnTo(raw, "https://gw.example.com")
		if !ok {
			return
		}
		if !strings.HasPrefix(got, "/") || strings.HasPrefix(got, "//") || strings.ContainsAny(got, "\\\r\n\t") {
			t.Fatalf("ReturnTo(%q) accepted %q", raw, got)
		}
	})
}

func TestIssuerProblem(t *testing.T) {
	for raw, ok := range map[string]bool{
		"https://login.example.com/tenant/v2.0": true, "http://127.0.0.1:5556/dex": true, "http://localhost:8080": true,
		"http://[::1]:9000": true, "http://idp.example.com": false, "https://idp.example.com?x=1": false, "ftp://idp": false,
		"https://u:p@idp.example.com": false, "idp.example.com": false,
	} {
		if got := IssuerProblem(raw) == ""; got != ok {
			t.Errorf("IssuerProblem(%q) ok=%v, want %v", raw, got, ok)
		}
	}
}
