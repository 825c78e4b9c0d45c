package wire

import (
	"time"

	"github.com/google/uuid"
)

// Credentials signs a person in.
type Credentials struct {
	Email    string `json:"email" jsonschema:"minLength=3,maxLength=254"`
	Password string `json:"password" jsonschema:"minLength=8,maxLength=256"`
}

// Signup creates a person's account.
type Signup struct {
	Email    string `json:"email" jsonschema:"minLength=3,maxLength=254"`
	Password string `json:"password" jsonschema:"minLength=8,maxLength=256"`
	Name     string `json:"name,omitempty" jsonschema:"maxLength=100"`
}

// SessionResult answers sign-in and sign-up; the session itself travels in
// the svc_session cookie.
type SessionResult struct {
	User      User      `json:"user"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Me describes the caller: who, through which credential, with what rights.
type Me struct {
	User        User           `json:"user"`
	Credential  string         `json:"credential" jsonschema:"enum=session,enum=management_key"`
	Key         *ManagementKey `json:"key" jsonschema:"nullable"`
	Memberships []Membership   `json:"memberships"`
}

// LoggedOut answers logout.
type LoggedOut struct {
	LoggedOut bool `json:"logged_out"`
}

// Bootstrap creates the first instance owner on an empty instance.
type Bootstrap struct {
	Token            string `json:"token"`
	Email            string `json:"email" jsonschema:"minLength=3,maxLength=254"`
	Password         string `json:"password" jsonschema:"minLength=8,maxLength=256"`
	Name             string `json:"name,omitempty" jsonschema:"maxLength=100"`
	OrganizationName string `json:"organization_name,omitempty" jsonschema:"maxLength=100"`
	WorkspaceName    string `json:"workspace_name,omitempty" jsonschema:"maxLength=100"`
}

// BootstrapResult is what bootstrap made, with an instance key shown once
// so automation can go on without a browser.
type BootstrapResult struct {
	User          User          `json:"user"`
	Organization  Organization  `json:"organization"`
	Workspace     Workspace     `json:"workspace"`
	ManagementKey ManagementKey `json:"management_key"`
}

// BootstrapStatus says whether the instance still awaits its first owner.
type BootstrapStatus struct {
	Bootstrapped bool `json:"bootstrapped"`
}

// Invitation asks a person, by email, to join an organization. Token is
// present only when the invitation is issued or reissued.
type Invitation struct {
	ID         uuid.UUID  `json:"id"`
	OrgID      uuid.UUID  `json:"org_id"`
	Email      string     `json:"email"`
	Role       string     `json:"role" jsonschema:"enum=owner,enum=admin,enum=member,enum=viewer"`
	Status     string     `json:"status" jsonschema:"enum=pending,enum=accepted,enum=revoked,enum=expired"`
	InvitedBy  *uuid.UUID `json:"invited_by" jsonschema:"nullable"`
	AcceptedBy *uuid.UUID `json:"accepted_by" jsonschema:"nullable"`
	ExpiresAt  time.Time  `json:"expires_at"`
	AcceptedAt *time.Time `json:"accepted_at" jsonschema:"nullable"`
	RevokedAt  *time.Time `json:"revoked_at" jsonschema:"nullable"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	Token      string     `json:"token,omitempty"`
}

// InvitationCreate issues an invitation.
type InvitationCreate struct {
	Email string `json:"email" jsonschema:"minLength=3,maxLength=254"`
	Role  string `json:"role" jsonschema:"enum=owner,enum=admin,enum=member,enum=viewer"`
}

// InvitationAccept redeems an invitation token. A signed-in caller joins as
// themselves; otherwise Password (and optionally Name) create the account.
type InvitationAccept struct {
	Token    string `json:"token"`
	Password string `json:"password,omitempty" jsonschema:"minLength=8,maxLength=256"`
	Name     string `json:"name,omitempty" jsonschema:"maxLength=100"`
}

// InvitationAccepted is the membership an accepted invitation made.
type InvitationAccepted struct {
	User       User       `json:"user"`
	Membership Membership `json:"membership"`
}

// AuditEvent records one mutation. It never carries a secret.
type AuditEvent struct {
	ID        uuid.UUID      `json:"id"`
	Action    string         `json:"action"`
	Actor     AuditActor     `json:"actor"`
	Target    AuditTarget    `json:"target"`
	Scope     AuditScope     `json:"scope"`
	RequestID string         `json:"request_id"`
	Details   map[string]any `json:"details"`
	CreatedAt time.Time      `json:"created_at"`
}

// AuditActor is who did it: a user (or service account) and the key used,
// or an organization's SCIM token (its id as key_id).
type AuditActor struct {
	Type  string     `json:"type" jsonschema:"enum=user,enum=service_account,enum=system,enum=scim_token"`
	ID    *uuid.UUID `json:"id" jsonschema:"nullable"`
	KeyID *uuid.UUID `json:"key_id" jsonschema:"nullable"`
}

// AuditTarget is what it was done to.
type AuditTarget struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// AuditScope is where it happened.
type AuditScope struct {
	Level       string     `json:"level" jsonschema:"enum=instance,enum=organization,enum=workspace"`
	OrgID       *uuid.UUID `json:"org_id" jsonschema:"nullable"`
	WorkspaceID *uuid.UUID `json:"workspace_id" jsonschema:"nullable"`
}

// EnrollmentChoice is an organization, with its workspaces, where the caller
// may approve a CLI authorization.
type EnrollmentChoice struct {
	Organization Organization `json:"organization"`
	Workspaces   []Workspace  `json:"workspaces"`
}

// CLIStart begins a device-style CLI sign-in.
type CLIStart struct {
	// Label names the requesting device, e.g. "gw on laptop"; it becomes
	// the delivered key's label.
	Label string `json:"label,omitempty" jsonschema:"minLength=1,maxLength=80"`
}

// CLIStarted tells the CLI what to show and how to poll.
type CLIStarted struct {
	PollSecret      string    `json:"poll_secret"`
	UserCode        string    `json:"user_code"`
	VerificationURL string    `json:"verification_url"`
	IntervalSeconds int       `json:"interval_seconds"`
	ExpiresAt       time.Time `json:"expires_at"`
}

// CLIApprove approves a CLI sign-in for a scope (from a browser session).
type CLIApprove struct {
	UserCode string `json:"user_code"`
	// Scope instance approves an instance-scope key (for an instance
	// owner or admin: the catalog, platform credentials, data planes);
	// org_id and workspace_id are then left out. Otherwise org_id is
	// required.
	Scope       string     `json:"scope,omitempty" jsonschema:"enum=instance,enum=organization,enum=workspace"`
	OrgID       string     `json:"org_id,omitempty" jsonschema:"description=Organization UUID or slug (required unless scope is instance)"`
	WorkspaceID *uuid.UUID `json:"workspace_id,omitempty"`
}

// CLIDeny refuses a CLI sign-in.
type CLIDeny struct {
	UserCode string `json:"user_code"`
}

// CLIPoll asks how a CLI sign-in stands. The CLI's current management key,
// if it has one, travels in the Authorization header and is revoked when
// the new key replaces it.
type CLIPoll struct {
	PollSecret string `json:"poll_secret"`
}

// CLIPollResult is spec 2.7. Token is set once, on the poll that delivers.
type CLIPollResult struct {
	Status          string     `json:"status" jsonschema:"enum=pending,enum=approved,enum=denied,enum=expired,enum=consumed,enum=slow_down"`
	IntervalSeconds int        `json:"interval_seconds"`
	Scope           *string    `json:"scope" jsonschema:"nullable,enum=instance,enum=organization,enum=workspace"`
	Token           *string    `json:"token" jsonschema:"nullable"`
	OrgID           *uuid.UUID `json:"org_id" jsonschema:"nullable"`
	OrgName         *string    `json:"org_name" jsonschema:"nullable"`
	WorkspaceID     *uuid.UUID `json:"workspace_id" jsonschema:"nullable"`
	// ReplacedKeyID is the CLI's previous key, revoked by this delivery.
	ReplacedKeyID *uuid.UUID `json:"replaced_key_id" jsonschema:"nullable"`
}

// CLIAuthorization describes a pending sign-in to the approval page.
type CLIAuthorization struct {
	UserCode  string    `json:"user_code"`
	Label     string    `json:"label"`
	Status    string    `json:"status" jsonschema:"enum=pending,enum=approved,enum=denied,enum=expired,enum=consumed"`
	ExpiresAt time.Time `json:"expires_at"`
}

// PasswordChange changes the caller's password. The current password is
// asked again so that a borrowed session or a leaked key cannot lock the
// owner out.
type PasswordChange struct {
	CurrentPassword string `json:"current_password"`
	NewPassword     string `json:"new_password"`
}

// PasswordChanged answers a password change: the caller's other sessions
// have ended.
type PasswordChanged struct {
	SessionsEnded int `json:"sessions_ended"`
}

// Session is one of the caller's browser sessions (never its token).
type Session struct {
	ID            uuid.UUID `json:"id"`
	CreatedAt     time.Time `json:"created_at"`
	ExpiresAt     time.Time `json:"expires_at"`
	UserAgent     string    `json:"user_agent"`
	ClientAddress string    `json:"client_address"`
	// Current marks the session the request came with.
	Current bool `json:"current"`
}

// SessionsEnded answers ending sessions.
type SessionsEnded struct {
	SessionsEnded int `json:"sessions_ended"`
}
