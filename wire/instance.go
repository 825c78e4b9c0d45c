package wire

import "time"

// InstanceSettings are the instance-wide settings (GET/PATCH
// /api/v1/instance/settings).
type InstanceSettings struct {
	// Egress is the instance's address policy for the URLs gw calls,
	// beyond its built-in refusals (docs/security.md).
	Egress EgressSetting `json:"egress"`
	// BuiltinDeny lists the ranges gw refuses whatever the setting says,
	// unless allow names the very range (read only).
	BuiltinDeny []string `json:"builtin_deny"`
	// EgressDenyPrivate reports gw serve --egress-deny-private on the
	// server that answered: loopback and private ranges refused too (read
	// only; a flag of each process).
	EgressDenyPrivate bool `json:"egress_deny_private"`
	// Revision counts the egress setting's changes (0: never set).
	Revision  int64      `json:"revision"`
	UpdatedAt *time.Time `json:"updated_at" jsonschema:"nullable"`
	// OAuthCIMDAllowPrivate lets gw's OAuth authorization server fetch
	// Client ID Metadata Documents from private and loopback addresses
	// (default false; docs/identity.md).
	OAuthCIMDAllowPrivate bool `json:"oauth_cimd_allow_private"`
}

// EgressSetting refuses address ranges (deny) and makes exceptions (allow:
// it wins over deny and --egress-deny-private for what it names, and lifts
// a built-in refusal only when it names that very range). Each entry is a
// CIDR range in canonical form or a single IP address.
type EgressSetting struct {
	Deny  []string `json:"deny" jsonschema:"maxItems=256"`
	Allow []string `json:"allow" jsonschema:"maxItems=256"`
}

// InstanceSettingsUpdate changes instance-wide settings; a member left out
// stays as it is.
type InstanceSettingsUpdate struct {
	// Egress replaces the egress setting whole; a list left out is empty.
	Egress *EgressSettingUpdate `json:"egress,omitempty"`
	// OAuthCIMDAllowPrivate sets oauth_cimd_allow_private.
	OAuthCIMDAllowPrivate *bool `json:"oauth_cimd_allow_private,omitempty"`
}

// EgressSettingUpdate is an egress setting as a PATCH gives it.
type EgressSettingUpdate struct {
	Deny  []string `json:"deny,omitempty" jsonschema:"maxItems=256"`
	Allow []string `json:"allow,omitempty" jsonschema:"maxItems=256"`
}
