package publish

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
)

// ForDataPlane turns a stored bundle into the one an enrolled data plane
// receives: every provider secret re-sealed from the master key to the
// data plane's public key, and the body signed again. Platform-scope
// (instance-wide) credentials are left out unless the enrollment allows
// them (platformCredentials): they serve every organization, so a
// data-plane host that holds them exposes more than its own tenants. The
// version stays the stored one: the content is the same, only the sealing
// differs, so a data plane that admitted this version has nothing new to
// admit. (A change of the enrollment's choice republishes the bundles
// under a new version: Compiler.Republish.)
//
// Sealing is randomized, so two calls give different bytes (and hashes)
// for one version; data planes compare versions, not hashes, of what an
// enrollment poll brings (dataplane.Remote).
func ForDataPlane(row *store.Bundle, kr *secrets.Keyring, signer ed25519.PrivateKey, to secrets.DataPlanePublicKey, platformCredentials bool) (bundle.Signed, error) {
	var body bundle.Body
	if err := json.Unmarshal([]byte(row.Body), &body); err != nil {
		return bundle.Signed{}, fmt.Errorf("stored bundle of organization %s does not parse: %w", row.OrgID, err)
	}
	if !platformCredentials {
		body.Credentials = slices.DeleteFunc(body.Credentials, func(c bundle.Credential) bool { return c.Scope == policy.ScopePlatform })
	}
	for i := range body.Credentials {
		c := &body.Credentials[i]
		sealed, err := kr.Reseal(c.SecretSealed, secrets.CredentialAAD(c.ID), to)
		if err != nil {
			return bundle.Signed{}, fmt.Errorf("provider credential %s: %w", c.ID, err)
		}
		c.SecretSealed = sealed
	}
	for i := range body.Workspaces {
		w := &body.Workspaces[i]
		if a := w.Archive; a != nil {
			sealed, err := kr.Reseal(a.SecretSealed, secrets.ArchiveAAD(w.ID, a.Endpoint, a.Bucket, a.AccessKeyID), to)
			if err != nil {
				return bundle.Signed{}, fmt.Errorf("workspace %s archive: %w", w.ID, err)
			}
			a.SecretSealed = sealed
		}
	}
	for i := range body.Guardrails {
		g := &body.Guardrails[i]
		for j := range g.Detectors {
			d := &g.Detectors[j]
			if d.SecretSealed == "" {
				continue
			}
			sealed, err := kr.Reseal(d.SecretSealed, secrets.GuardrailWebhookAAD(g.ID, d.URL), to)
			if err != nil {
				return bundle.Signed{}, fmt.Errorf("guardrail %s: %w", g.ID, err)
			}
			d.SecretSealed = sealed
		}
	}
	for i := range body.MCPServers {
		m := &body.MCPServers[i]
		if m.SecretSealed == "" {
			continue
		}
		sealed, err := kr.Reseal(m.SecretSealed, MCPServerAAD(m.ID), to)
		if err != nil {
			return bundle.Signed{}, fmt.Errorf("MCP server %s: %w", m.ID, err)
		}
		m.SecretSealed = sealed
	}
	return bundle.Sign(&body, signer)
}

// MCPServerAAD binds an MCP server's sealed secret to its id (the same
// binding as backend.MCPServerAAD: a sealed value copied onto another
// server does not open).
func MCPServerAAD(id fmt.Stringer) string { return secrets.MCPServerAAD(id) }
