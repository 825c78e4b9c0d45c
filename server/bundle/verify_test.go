package bundle_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/bundle/bundletest"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/policy"
)

var small = bundletest.Scale{Keys: 6, Policies: 20, Workspaces: 2, Users: 3}

func signingPair(t *testing.T) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv
}

// signRaw signs bytes the way Sign does, for bodies Sign could not produce.
func signRaw(orgID uuid.UUID, version int64, data []byte, key ed25519.PrivateKey) bundle.Signed {
	sum := sha256.Sum256(data)
	return bundle.Signed{OrgID: orgID, Version: version, Hash: hex.EncodeToString(sum[:]),
		Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(key, data)), Body: data}
}

func TestVerifyAcceptsWhatSignProduces(t *testing.T) {
	pub, priv := signingPair(t)
	syn, err := bundletest.NewSynthetic(1, small)
	if err != nil {
		t.Fatal(err)
	}
	s, err := bundle.Sign(syn.Body, priv)
	if err != nil {
		t.Fatal(err)
	}
	body, err := bundle.Verify(s, pub)
	if err != nil {
		t.Fatal(err)
	}
	again, err := bundle.Sign(body, priv)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Body, s.Body) {
		t.Fatalf("a verified body does not re-encode to the signed bytes:\n%s\n%s", s.Body, again.Body)
	}

	// A key kept only for its provider batches: no token hash, expiry or
	// limits, even where its workspace sets limits.
	for i := range syn.Body.Workspaces {
		if syn.Body.Workspaces[i].ID == syn.Body.Keys[0].WorkspaceID {
			syn.Body.Workspaces[i].RateLimits = &bundle.RateLimits{RequestsPerMinute: 10}
		}
	}
	for i := range syn.Body.Keys {
		if syn.Body.Keys[i].WorkspaceID == syn.Body.Keys[0].WorkspaceID {
			syn.Body.Keys[i].RateLimits = &bundle.RateLimits{RequestsPerMinute: 10}
		}
	}
	syn.Body.Keys[0] = bundle.Key{ID: syn.Body.Keys[0].ID, WorkspaceID: syn.Body.Keys[0].WorkspaceID, OwnerID: syn.Body.Keys[0].OwnerID, BatchesOnly: true}
	if s, err = bundle.Sign(syn.Body, priv); err != nil {
		t.Fatal(err)
	}
	if body, err = bundle.Verify(s, pub); err != nil || !body.Keys[0].BatchesOnly {
		t.Fatalf("a batches-only key: %v", err)
	}
}

func TestVerifyRefuses(t *testing.T) {
	pub, priv := signingPair(t)
	_, otherPriv := signingPair(t)
	valid := func(t *testing.T) *bundle.Body {
		syn, err := bundletest.NewSynthetic(2, small)
		if err != nil {
			t.Fatal(err)
		}
		return syn.Body
	}
	sign := func(t *testing.T, b *bundle.Body) bundle.Signed {
		s, err := bundle.Sign(b, priv)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// edit changes the decoded JSON of a valid body and signs the result,
	// for bodies the types cannot express.
	edit := func(t *testing.T, change func(body map[string]any, policy0 map[string]any)) bundle.Signed {
		s := sign(t, valid(t))
		dec := json.NewDecoder(bytes.NewReader(s.Body))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		change(m, m["policies"].([]any)[0].(map[string]any))
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return signRaw(s.OrgID, s.Version, data, priv)
	}
	definition := func(p map[string]any) map[string]any { return p["definition"].(map[string]any) }
	unknownWS := uuid.New()

	cases := []struct {
		name   string
		signed func(t *testing.T) bundle.Signed
	}{
		{"tampered body", func(t *testing.T) bundle.Signed {
			s := sign(t, valid(t))
			s.Body = bytes.Replace(s.Body, []byte(`"ws-00"`), []byte(`"ws-99"`), 1)
			return s
		}},
		{"tampered body with its hash recomputed", func(t *testing.T) bundle.Signed {
			s := sign(t, valid(t))
			s.Body = bytes.Replace(s.Body, []byte(`"ws-00"`), []byte(`"ws-99"`), 1)
			sum := sha256.Sum256(s.Body)
			s.Hash = hex.EncodeToString(sum[:])
			return s
		}},
		{"tampered hash", func(t *testing.T) bundle.Signed {
			s := sign(t, valid(t))
			s.Hash = s.Hash[:63] + map[bool]string{true: "0", false: "1"}[s.Hash[63] != '0']
			return s
		}},
		{"tampered signature", func(t *testing.T) bundle.Signed {
			s := sign(t, valid(t))
			sig, _ := base64.StdEncoding.DecodeString(s.Signature)
			sig[0] ^= 1
			s.Signature = base64.StdEncoding.EncodeToString(sig)
			return s
		}},
		{"signature not base64", func(t *testing.T) bundle.Signed {
			s := sign(t, valid(t))
			s.Signature = "!!"
			return s
		}},
		{"signed by another key", func(t *testing.T) bundle.Signed {
			s, err := bundle.Sign(valid(t), otherPriv)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{"envelope names another organization", func(t *testing.T) bundle.Signed {
			s := sign(t, valid(t))
			s.OrgID = uuid.New()
			return s
		}},
		{"envelope names another version", func(t *testing.T) bundle.Signed {
			s := sign(t, valid(t))
			s.Version++
			return s
		}},
		{"unsupported format", func(t *testing.T) bundle.Signed {
			b := valid(t)
			b.Format = bundle.Format + 1
			return sign(t, b)
		}},
		{"version zero", func(t *testing.T) bundle.Signed {
			b := valid(t)
			b.Version = 0
			return sign(t, b)
		}},
		{"key in an unknown workspace", func(t *testing.T) bundle.Signed {
			b := valid(t)
			b.Keys[0].WorkspaceID = unknownWS
			return sign(t, b)
		}},
		{"policy in an unknown workspace", func(t *testing.T) bundle.Signed {
			b := valid(t)
			b.Policies[0].WorkspaceID = unknownWS
			return sign(t, b)
		}},
		{"workspace credential in an unknown workspace", func(t *testing.T) bundle.Signed {
			b := valid(t)
			b.Credentials = append(b.Credentials, bundle.Credential{ID: uuid.New(), Scope: policy.ScopeWorkspace, WorkspaceID: &unknownWS, Provider: "openai", SecretSealed: "x"})
			return sign(t, b)
		}},
		{"org credential naming a workspace", func(t *testing.T) bundle.Signed {
			b := valid(t)
			ws := b.Workspaces[0].ID
			b.Credentials = append(b.Credentials, bundle.Credential{ID: uuid.New(), Scope: policy.ScopeOrg, WorkspaceID: &ws, Provider: "openai", SecretSealed: "x"})
			return sign(t, b)
		}},
		{"credential of an unknown scope", func(t *testing.T) bundle.Signed {
			b := valid(t)
			b.Credentials[0].Scope = "instance"
			return sign(t, b)
		}},
		{"repeated token hash", func(t *testing.T) bundle.Signed {
			b := valid(t)
			b.Keys[1].TokenHash = b.Keys[0].TokenHash
			return sign(t, b)
		}},
		{"malformed token hash", func(t *testing.T) bundle.Signed {
			b := valid(t)
			b.Keys[0].TokenHash = "sk-gw-plaintext"
			return sign(t, b)
		}},
		{"a batches-only key with a token hash", func(t *testing.T) bundle.Signed {
			b := valid(t)
			b.Keys[0].BatchesOnly = true
			return sign(t, b)
		}},
		{"a key with no token hash that is not batches-only", func(t *testing.T) bundle.Signed {
			b := valid(t)
			b.Keys[0].TokenHash = ""
			return sign(t, b)
		}},
		{"negative rate limit", func(t *testing.T) bundle.Signed {
			b := valid(t)
			b.Keys[0].RateLimits = &bundle.RateLimits{RequestsPerMinute: -1}
			return sign(t, b)
		}},
		{"empty rate limits", func(t *testing.T) bundle.Signed {
			b := valid(t)
			b.Workspaces[0].RateLimits = &bundle.RateLimits{}
			return sign(t, b)
		}},
		{"key rate limits above its workspace's", func(t *testing.T) bundle.Signed {
			b := valid(t)
			for i := range b.Workspaces {
				b.Workspaces[i].RateLimits = &bundle.RateLimits{TokensPerMinute: 100}
			}
			b.Keys[0].RateLimits = &bundle.RateLimits{TokensPerMinute: 101}
			return sign(t, b)
		}},
		{"key without the limits its workspace sets", func(t *testing.T) bundle.Signed {
			b := valid(t)
			b.Workspaces[0].RateLimits = &bundle.RateLimits{RequestsPerMinute: 5}
			for i := range b.Keys {
				b.Keys[i].RateLimits = &bundle.RateLimits{TokensPerMinute: 10}
			}
			return sign(t, b)
		}},
		{"repeated key id", func(t *testing.T) bundle.Signed {
			b := valid(t)
			b.Keys[1].ID = b.Keys[0].ID
			return sign(t, b)
		}},
		{"invalid catalog", func(t *testing.T) bundle.Signed {
			b := valid(t)
			b.Catalog.Models = append(b.Catalog.Models, catalog.Model{ID: "nobody/model", Provider: "nobody", Name: "x"})
			return sign(t, b)
		}},
		{"policy definition with an unknown member", func(t *testing.T) bundle.Signed {
			return edit(t, func(_, p map[string]any) { definition(p)["priority"] = 1 })
		}},
		{"policy definition with no rules", func(t *testing.T) bundle.Signed {
			return edit(t, func(_, p map[string]any) { definition(p)["rules"] = []any{} })
		}},
		{"policy without a definition", func(t *testing.T) bundle.Signed {
			return edit(t, func(_, p map[string]any) { delete(p, "definition") })
		}},
		{"unknown top-level member", func(t *testing.T) bundle.Signed {
			return edit(t, func(b, _ map[string]any) { b["surprise"] = true })
		}},
		{"keys null", func(t *testing.T) bundle.Signed {
			return edit(t, func(b, _ map[string]any) { b["keys"] = nil })
		}},
		{"trailing data", func(t *testing.T) bundle.Signed {
			s := sign(t, valid(t))
			return signRaw(s.OrgID, s.Version, append(s.Body, []byte(`}`)...), priv)
		}},
		{"not JSON", func(t *testing.T) bundle.Signed { return signRaw(uuid.New(), 1, []byte("bundle"), priv) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.signed(t)
			body, err := bundle.Verify(s, pub)
			if !errors.Is(err, bundle.ErrInvalid) || body != nil {
				t.Fatalf("got %v, %v; want ErrInvalid", body != nil, err)
			}
			t.Log(err)
		})
	}
}
