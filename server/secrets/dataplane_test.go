package secrets_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server/secrets"
)

func TestSealToDataPlane(t *testing.T) {
	kr := secrets.NewKeyring(mustKey(t))
	dp, err := secrets.GenerateDataPlaneKey()
	if err != nil {
		t.Fatal(err)
	}
	master, err := kr.Seal([]byte("sk-provider"), "provider_credential:1")
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := kr.Reseal(master, "provider_credential:1", dp.Public())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sealed, "sk-provider") || !strings.Contains(sealed, dp.Public().Fingerprint()) {
		t.Fatalf("sealed value %q", sealed)
	}
	if pt, err := dp.Open(sealed, "provider_credential:1"); err != nil || string(pt) != "sk-provider" {
		t.Fatalf("the data plane's own key: %q, %v", pt, err)
	}
	// The master key cannot open what was sealed to a data plane.
	if _, err := kr.Open(sealed, "provider_credential:1"); !errors.Is(err, secrets.ErrCannotOpen) {
		t.Fatalf("master keyring opened a value sealed to a data plane: %v", err)
	}
	// Nor can another data plane, nor this one for another credential, nor
	// this one a value it was not sent.
	other, _ := secrets.GenerateDataPlaneKey()
	if _, err := other.Open(sealed, "provider_credential:1"); !errors.Is(err, secrets.ErrCannotOpen) {
		t.Fatalf("another data plane: %v", err)
	}
	if _, err := dp.Open(sealed, "provider_credential:2"); !errors.Is(err, secrets.ErrCannotOpen) {
		t.Fatalf("moved to another credential: %v", err)
	}
	if _, err := dp.Open(master, "provider_credential:1"); !errors.Is(err, secrets.ErrCannotOpen) {
		t.Fatalf("a master-sealed value: %v", err)
	}
	tampered := sealed[:len(sealed)-2] + "AA"
	if tampered == sealed {
		tampered = sealed[:len(sealed)-2] + "BB"
	}
	if _, err := dp.Open(tampered, "provider_credential:1"); !errors.Is(err, secrets.ErrCannotOpen) {
		t.Fatalf("tampered: %v", err)
	}
	// Sealing is randomized: two seals of one secret differ.
	again, _ := secrets.SealTo(dp.Public(), []byte("sk-provider"), "provider_credential:1")
	if again == sealed {
		t.Fatal("two seals are identical")
	}
}

func TestDataPlaneKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "data-plane-key")
	k, created, err := secrets.LoadDataPlaneKey(path)
	if err != nil || !created {
		t.Fatalf("first load: created %v, %v", created, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode: %v %v", fi.Mode(), err)
	}
	again, created, err := secrets.LoadDataPlaneKey(path)
	if err != nil || created || again.Public().String() != k.Public().String() {
		t.Fatalf("second load: created %v, same key %v, %v", created, again.Public().String() == k.Public().String(), err)
	}
	pub, err := secrets.ParseDataPlanePublicKey(k.Public().String())
	if err != nil || pub.Fingerprint() != k.Public().Fingerprint() {
		t.Fatalf("public key round trip: %v", err)
	}
	sealed, err := secrets.SealTo(pub, []byte("x"), "a")
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := again.Open(sealed, "a"); err != nil || string(pt) != "x" {
		t.Fatalf("reloaded key opens: %q %v", pt, err)
	}
	if _, err := secrets.ParseDataPlanePublicKey("AAAA"); err == nil {
		t.Fatal("a short public key parsed")
	}
}

func mustKey(t *testing.T) secrets.Key {
	t.Helper()
	k, err := secrets.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}
