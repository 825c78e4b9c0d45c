package dataplane

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/wire"
)

// Remote keeps a data plane that runs apart from the control plane in step
// with it: it polls bundles, admits them, keeps the last admitted set on
// disk (so a restart serves without the control plane), and sends
// heartbeats. Everything it needs from the control plane goes through the
// management API with one instance-scope key.
type Remote struct {
	Client  *client.Client
	Plane   *Plane
	ID      string
	Version string
	// StateDir holds the last admitted bundles and the pinned signing key.
	StateDir          string
	PollInterval      time.Duration
	HeartbeatInterval time.Duration
	Log               *slog.Logger
	// SpoolDepth reports the usage events waiting to be shipped, if any.
	SpoolDepth func() int64
	// Key is this data plane's own key pair: its bundles' secrets are
	// sealed to the public half.
	Key *secrets.DataPlaneKey
	// NoCache keeps the admitted bundles in memory only: no provider
	// secret is on disk, at the price of serving nothing after a restart
	// until the control plane answers.
	NoCache bool

	etag      string
	requested bool
}

const (
	bundlesFile = "bundles.json"
	pinnedFile  = "bundle-public-key"
)

// ParsePublicKey reads an Ed25519 public key given as hex or base64.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	for _, dec := range []func(string) ([]byte, error){hex.DecodeString, base64.StdEncoding.DecodeString, base64.RawStdEncoding.DecodeString} {
		if raw, err := dec(s); err == nil && len(raw) == ed25519.PublicKeySize {
			return ed25519.PublicKey(raw), nil
		}
	}
	return nil, errors.New("bundle public key must be 32 bytes, hex or base64")
}

// PinnedSigningKey is the key bundles must be signed with when it is
// already settled: the operator's (given), else the one this data plane
// pinned on an earlier run. nil means neither: the first poll brings the
// control plane's, which is then pinned, so a later change is refused
// rather than trusted. It never waits for the control plane: a fresh data
// plane answers 503 bundle_not_ready until its first bundle is admitted.
func PinnedSigningKey(stateDir, given string) (ed25519.PublicKey, error) {
	if given != "" {
		return ParsePublicKey(given)
	}
	raw, err := os.ReadFile(filepath.Join(stateDir, pinnedFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ParsePublicKey(string(raw))
}

// pin adopts the signing key the control plane announced, on first
// contact only.
func (r *Remote) pin(announced string) error {
	if r.Plane.HasSigningKey() {
		return nil
	}
	if announced == "" {
		return errors.New("the control plane has no signing key yet")
	}
	pub, err := ParsePublicKey(announced)
	if err != nil {
		return fmt.Errorf("control plane announced a bad signing key: %w", err)
	}
	path := filepath.Join(r.StateDir, pinnedFile)
	if err := writeFileAtomic(path, []byte(announced+"\n")); err != nil {
		return err
	}
	r.Plane.SetSigningKey(pub)
	r.Log.Info("pinned the control plane's bundle signing key", "file", path)
	return nil
}

// LoadCached admits the bundles saved by the last run and marks the plane
// ready if there were any, so a restart serves before the control plane
// answers. Without a cache it deletes what an earlier run saved: an
// operator who turned the cache off wants no secret left on disk.
func (r *Remote) LoadCached() error {
	path := filepath.Join(r.StateDir, bundlesFile)
	if r.NoCache {
		err := os.Remove(path)
		if err == nil {
			r.Log.Info("the bundle cache is off: deleted the bundles an earlier run saved", "file", path)
		}
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read cached bundles: %w", err)
	}
	var cached wire.DataPlaneBundles
	if err := json.Unmarshal(raw, &cached); err != nil {
		return fmt.Errorf("cached bundles are corrupt: %w", err)
	}
	err = r.Plane.AdmitAll(signedOf(cached.Bundles))
	r.Plane.MarkReady()
	return err
}

func signedOf(bs []wire.SignedBundle) []bundle.Signed {
	out := make([]bundle.Signed, len(bs))
	for i, b := range bs {
		out[i] = bundle.Signed{OrgID: b.OrgID, Version: b.Version, Hash: b.Hash, Signature: b.Signature, Body: b.Body}
	}
	return out
}

// enroll asks the control plane to enroll this data plane with its public
// key, once per run (repeating is harmless), and says what an admin must
// check before approving it.
func (r *Remote) enroll(ctx context.Context) error {
	if r.requested {
		return nil
	}
	e, err := r.Client.RequestEnrollment(ctx, wire.DataPlaneEnrollmentRequest{ID: r.ID, PublicKey: r.Key.Public().String()})
	if err != nil {
		return fmt.Errorf("ask to be enrolled: %w", err)
	}
	r.requested = true
	if e.Status != "approved" {
		r.Log.Warn("this data plane is not enrolled yet; an instance admin approves it with: gw data-planes enroll "+r.ID+
			" --org ORG --fingerprint "+e.Fingerprint, "status", e.Status, "fingerprint", e.Fingerprint)
	}
	return nil
}

// Sync asks to be enrolled if it has not yet, polls once, admits what
// changed, withdraws organizations the control plane no longer sends (no
// longer enrolled, or deleted), and saves what it admitted. A revoked
// enrollment withdraws everything, the cache included.
func (r *Remote) Sync(ctx context.Context) error {
	if err := r.enroll(ctx); err != nil {
		return err
	}
	b, etag, notModified, err := r.Client.PollBundles(ctx, r.ID, r.etag)
	if client.IsStatus(err, 404) {
		// The enrollment is gone (or was never stored): ask again.
		r.requested = false
	}
	if err != nil {
		return err
	}
	if notModified {
		return nil
	}
	if err := r.pin(b.PublicKey); err != nil {
		return err
	}
	if b.Enrollment == "pending" {
		r.etag = etag
		return nil
	}
	// Each enrollment poll seals the secrets afresh, so the bytes (and
	// hash) of a version differ from poll to poll; the version is what
	// says whether anything changed.
	admitted := r.Plane.Versions()
	fresh := make([]wire.SignedBundle, 0, len(b.Bundles))
	listed := make(map[uuid.UUID]bool, len(b.Bundles))
	for _, s := range b.Bundles {
		listed[s.OrgID] = true
		if v, ok := admitted[s.OrgID]; !ok || s.Version > v {
			fresh = append(fresh, s)
		}
	}
	admitErr := r.Plane.AdmitAll(signedOf(fresh))
	for org := range admitted {
		if !listed[org] {
			r.Plane.Withdraw(org)
		}
	}
	r.Plane.MarkReady()
	if b.Enrollment == "revoked" {
		r.Log.Warn("this data plane's enrollment is revoked: it serves no organization")
	}
	if err := r.save(b); err != nil {
		return err
	}
	// A bundle that failed admission is retried on the next change only if
	// the ETag moves; remember it only when everything was admitted.
	if admitErr == nil {
		r.etag = etag
	}
	return admitErr
}

// save keeps what a poll brought for the next start, unless the cache is
// off.
func (r *Remote) save(b wire.DataPlaneBundles) error {
	if r.NoCache {
		return nil
	}
	raw, err := json.Marshal(b)
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(r.StateDir, bundlesFile), raw)
}

// Heartbeat reports the admitted versions and spool depth.
func (r *Remote) Heartbeat(ctx context.Context) error {
	versions := map[string]int64{}
	for org, v := range r.Plane.Versions() {
		versions[org.String()] = v
	}
	var depth int64
	if r.SpoolDepth != nil {
		depth = r.SpoolDepth()
	}
	_, err := r.Client.Heartbeat(ctx, wire.Heartbeat{ID: r.ID, Version: r.Version, BundleVersions: versions, SpoolDepth: depth})
	return err
}

// Run polls and beats until ctx ends; failures are logged and retried on
// the next tick, while the plane keeps serving what it admitted.
func (r *Remote) Run(ctx context.Context) {
	poll := time.NewTicker(r.PollInterval)
	beat := time.NewTicker(r.HeartbeatInterval)
	defer poll.Stop()
	defer beat.Stop()
	r.tick(ctx, r.Sync, "bundle poll")
	r.tick(ctx, r.Heartbeat, "heartbeat")
	for {
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
			r.tick(ctx, r.Sync, "bundle poll")
		case <-beat.C:
			r.tick(ctx, r.Heartbeat, "heartbeat")
		}
	}
}

func (r *Remote) tick(ctx context.Context, fn func(context.Context) error, what string) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := fn(cctx); err != nil && ctx.Err() == nil {
		r.Log.Warn(what+" failed", "error", err)
	}
}

// writeFileAtomic writes data to path through a temporary file and a
// rename, with mode 0600, so a crash never leaves half a file.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
