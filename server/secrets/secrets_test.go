package secrets

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	k, _ := GenerateKey()
	kr := NewKeyring(k)
	sealed, err := kr.Seal([]byte("sk-live-123"), "provider_credential:a")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sealed, "sk-live") {
		t.Fatal("sealed value contains the plaintext")
	}
	pt, err := kr.Open(sealed, "provider_credential:a")
	if err != nil || string(pt) != "sk-live-123" {
		t.Fatalf("open: %q %v", pt, err)
	}
	if _, err := kr.Open(sealed, "provider_credential:b"); !errors.Is(err, ErrCannotOpen) {
		t.Fatalf("other aad: %v", err)
	}
	tampered := sealed[:len(sealed)-2] + "AA"
	if _, err := kr.Open(tampered, "provider_credential:a"); !errors.Is(err, ErrCannotOpen) {
		t.Fatalf("tampered: %v", err)
	}
	other, _ := GenerateKey()
	if _, err := NewKeyring(other).Open(sealed, "provider_credential:a"); !errors.Is(err, ErrCannotOpen) || strings.Contains(err.Error(), "sk-") {
		t.Fatalf("foreign key: %v", err)
	}
	if !kr.SealedWithCurrent(sealed) || NewKeyring(other, k).SealedWithCurrent(sealed) {
		t.Fatal("SealedWithCurrent is wrong")
	}
	if pt, err := NewKeyring(other, k).Open(sealed, "provider_credential:a"); err != nil || string(pt) != "sk-live-123" {
		t.Fatalf("keyring with the old key: %v", err)
	}
}

func TestLoadKeyringCreatesFile(t *testing.T) {
	dir := t.TempDir()
	files := KeyFiles{Current: filepath.Join(dir, "secret.key")}
	kr, err := LoadKeyring("", files)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(files.Current)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	again, err := LoadKeyring("", files)
	if err != nil || again.CurrentID() != kr.CurrentID() {
		t.Fatalf("reload: %v", err)
	}
	envKey, _ := GenerateKey()
	fromEnv, err := LoadKeyring(envKey.Encode(), files)
	if err != nil || fromEnv.CurrentID() != envKey.ID {
		t.Fatalf("env key: %v", err)
	}
	if _, err := LoadKeyring("short", files); err == nil {
		t.Fatal("bad env key accepted")
	}
}

func TestParseKeyForms(t *testing.T) {
	k, _ := GenerateKey()
	for _, text := range []string{k.Encode(), k.Encode() + "\n"} {
		if got, err := ParseKey(text); err != nil || got.ID != k.ID {
			t.Fatalf("%q: %v", text, err)
		}
	}
	if _, err := ParseKey(strings.Repeat("a", 63)); err == nil {
		t.Fatal("63 hex digits accepted")
	}
}
