package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/argon2"
)

// argon2id parameters: OWASP's recommended floor (19 MiB, 2 passes).
const (
	argonTime    = 2
	argonMemory  = 19 * 1024
	argonThreads = 1
	argonKeyLen  = 32
	argonSaltLen = 16
)

// HashPassword returns an encoded argon2id hash in the PHC string format.
func HashPassword(password string) (string, error) {
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("read salt: %w", err)
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, argonMemory, argonTime, argonThreads, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

var errBadHash = errors.New("malformed password hash")

// CheckPassword reports whether password matches encoded. It reads the
// parameters from the hash, so raising them later keeps old hashes valid.
func CheckPassword(encoded, password string) (bool, error) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errBadHash
	}
	var mem, iters uint32
	var threads uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &mem, &iters, &threads); err != nil {
		return false, errBadHash
	}
	b64 := base64.RawStdEncoding
	salt, err := b64.DecodeString(parts[4])
	if err != nil {
		return false, errBadHash
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil {
		return false, errBadHash
	}
	got := argon2.IDKey([]byte(password), salt, iters, mem, threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// dummyHash lets a sign-in for an unknown email spend the same time as one
// for a known email, so timing does not reveal which emails exist.
var dummyHash, _ = HashPassword("gw-timing-equaliser")

// BurnPasswordCheck spends the time of one password check.
func BurnPasswordCheck(password string) {
	_, _ = CheckPassword(dummyHash, password)
}

// ErrPasswordBusy means every password-hashing slot stayed taken for as
// long as a caller may wait: the server answers 503 rather than queue
// without end.
var ErrPasswordBusy = errors.New("too many sign-ins in progress; try again in a moment")

// PasswordGate bounds how many argon2id computations run at once. Each
// one holds argonMemory (19 MiB) for its duration, so without a bound 200
// concurrent sign-ins need 4 GB; with it, memory is slots × 19 MiB and the
// rest wait (briefly, and only so many) for a slot.
type PasswordGate struct {
	slots      chan struct{}
	waiting    atomic.Int64
	maxWaiting int64
	maxWait    time.Duration
}

// NewPasswordGate allows slots computations at once, at most maxWaiting
// callers waiting, each for at most maxWait.
func NewPasswordGate(slots, maxWaiting int, maxWait time.Duration) *PasswordGate {
	return &PasswordGate{slots: make(chan struct{}, slots), maxWaiting: int64(maxWaiting), maxWait: maxWait}
}

// Passwords is the process's gate. It is process-wide on purpose: the
// memory it protects is the process's, whichever server or command hashes.
var Passwords = NewPasswordGate(min(max(runtime.GOMAXPROCS(0), 2), 8), 512, 10*time.Second)

func (g *PasswordGate) run(ctx context.Context, fn func()) error {
	select {
	case g.slots <- struct{}{}:
	default:
		if g.waiting.Add(1) > g.maxWaiting {
			g.waiting.Add(-1)
			return ErrPasswordBusy
		}
		t := time.NewTimer(g.maxWait)
		select {
		case g.slots <- struct{}{}:
			g.waiting.Add(-1)
			t.Stop()
		case <-t.C:
			g.waiting.Add(-1)
			return ErrPasswordBusy
		case <-ctx.Done():
			g.waiting.Add(-1)
			t.Stop()
			return ctx.Err()
		}
	}
	defer func() { <-g.slots }()
	fn()
	return nil
}

// Hash is HashPassword within the gate.
func (g *PasswordGate) Hash(ctx context.Context, password string) (hash string, err error) {
	if gerr := g.run(ctx, func() { hash, err = HashPassword(password) }); gerr != nil {
		return "", gerr
	}
	return hash, err
}

// Check is CheckPassword within the gate.
func (g *PasswordGate) Check(ctx context.Context, encoded, password string) (ok bool, err error) {
	if gerr := g.run(ctx, func() { ok, err = CheckPassword(encoded, password) }); gerr != nil {
		return false, gerr
	}
	return ok, err
}

// Burn is BurnPasswordCheck within the gate.
func (g *PasswordGate) Burn(ctx context.Context, password string) error {
	return g.run(ctx, func() { BurnPasswordCheck(password) })
}
