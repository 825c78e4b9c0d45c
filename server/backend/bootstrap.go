package backend

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
)

// Rules for the credentials people sign in with.
var (
	EmailRule = validate.StringRule{Min: 3, Max: 254, NoControl: true, Pattern: regexp.MustCompile(`^\s*[^@\s]+@[^@\s]+\s*$`)}
	// Passwords: long enough to resist guessing; capped so hashing cost is
	// bounded.
	PasswordRule = validate.StringRule{Min: 8, Max: 256, Secret: true}
)

// ErrAlreadyBootstrapped is returned by a second bootstrap.
var ErrAlreadyBootstrapped = errors.New("the instance is already bootstrapped; sign in instead")

// BootstrapInput describes the first owner and the default tenancy; empty
// names take defaults.
type BootstrapInput struct {
	Email, Password, Name           string
	OrganizationName, WorkspaceName string
}

// Bootstrapped is what a bootstrap created. Token is the owner's first
// management key (instance scope, every permission), shown once.
type Bootstrapped struct {
	User         *store.User
	Organization *store.Organization
	Workspace    *store.Workspace
	Key          *store.ManagementKey
	Token        string
}

// Bootstrap creates the first instance owner, a default organization and
// workspace, and the owner's first management key, once per instance: a
// second call fails with ErrAlreadyBootstrapped. within, when not nil,
// runs in the same transaction (the API starts the owner's session there).
// actor says where the bootstrap came from (a request, or gw serve); the
// audit entries record the new owner as the one acting, with the actor's
// request id.
func Bootstrap(ctx context.Context, st *store.Store, actor Actor, in BootstrapInput,
	within func(tx *store.Store, b *Bootstrapped) error) (*Bootstrapped, error) {
	if err := in.normalize(); err != nil {
		return nil, err
	}
	hash, err := auth.Passwords.Hash(ctx, in.Password)
	if err != nil {
		return nil, err
	}
	now := store.Now()
	b := &Bootstrapped{
		User: &store.User{ID: uuid.New(), Email: in.Email, Name: in.Name, PasswordHash: &hash, InstanceRole: auth.InstanceOwner,
			CreatedAt: now, UpdatedAt: now},
		Organization: &store.Organization{ID: uuid.New(), Name: in.OrganizationName, Slug: Slugify(in.OrganizationName, "default"),
			CreatedAt: now, UpdatedAt: now},
	}
	b.Workspace = &store.Workspace{ID: uuid.New(), OrgID: b.Organization.ID, Name: in.WorkspaceName,
		Slug: Slugify(in.WorkspaceName, "default"), CreatedAt: now, UpdatedAt: now}
	err = st.InTx(ctx, func(tx *store.Store) error {
		// Exactly one bootstrap wins: the conditional update is the gate.
		won, err := tx.MarkBootstrapped(ctx, now)
		if err != nil {
			return err
		}
		if !won {
			return ErrAlreadyBootstrapped
		}
		if err := b.create(ctx, tx, now); err != nil {
			return err
		}
		// The owner issues their own first key.
		owner := User(b.User.ID, false, nil, actor.RequestID)
		if b.Key, b.Token, err = MintManagementKey(ctx, tx, owner, KeySpec{Owner: b.User.ID, Permissions: auth.Names(), Label: "bootstrap"}); err != nil {
			return err
		}
		if within != nil {
			if err := within(tx, b); err != nil {
				return err
			}
		}
		return Audit(ctx, tx, owner, AuditEntry{Action: "instance.bootstrapped", TargetType: "user", TargetID: b.User.ID.String(),
			OrgID: &b.Organization.ID, Details: map[string]any{"email": b.User.Email, "organization": b.Organization.Slug, "workspace": b.Workspace.Slug}})
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// normalize checks the owner's email and password and fills in the
// defaults: the owner's name is their email, the organization and
// workspace are "Default".
func (in *BootstrapInput) normalize() error {
	in.Email = NormalizeEmail(in.Email)
	var errs validate.Errors
	validate.String(in.Email, validate.Loc{"bootstrap", "email"}, EmailRule, &errs)
	validate.String(in.Password, validate.Loc{"bootstrap", "password"}, PasswordRule, &errs)
	if err := errs.Err(); err != nil {
		return err
	}
	if in.Name == "" {
		in.Name = in.Email
	}
	if in.OrganizationName == "" {
		in.OrganizationName = "Default"
	}
	if in.WorkspaceName == "" {
		in.WorkspaceName = "Default"
	}
	return nil
}

// create stores the first owner, the organization they own and its
// workspace.
func (b *Bootstrapped) create(ctx context.Context, tx *store.Store, now time.Time) error {
	if err := tx.CreateUser(ctx, b.User); err != nil {
		return err
	}
	if err := tx.CreateOrganization(ctx, b.Organization); err != nil {
		return err
	}
	if err := tx.CreateMembership(ctx, &store.Membership{OrgID: b.Organization.ID, UserID: b.User.ID, Role: auth.OrgOwner,
		Status: auth.MembershipActive, CreatedAt: now, UpdatedAt: now}); err != nil {
		return err
	}
	return tx.CreateWorkspace(ctx, b.Workspace)
}

// Slugify makes a URL slug of a name: lower-case ASCII letters and digits
// separated by single dashes, at most 50 characters, fallback when nothing
// is left.
func Slugify(name, fallback string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.TrimRight(b.String(), "-")
	if len(s) > 50 {
		s = strings.TrimRight(s[:50], "-")
	}
	if s == "" {
		s = fallback
	}
	return s
}
