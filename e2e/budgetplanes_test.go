package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// budgetPlanes is the set-up the budget tests across data planes share: a
// control plane (gw serve, role control-plane) on SQLite or PostgreSQL,
// bootstrapped, at a fixed address so that one restarted after a kill is
// where the data planes look for it, and remote data planes (gw serve,
// role data-plane) enrolled for the default organization.
type budgetPlanes struct {
	cp     *server
	cpAddr string
	cpEnv  []string
	// token is the owner's management key, owner a client with it.
	token string
	owner *client.Client
	// dpToken is the management key the data planes call with.
	dpToken string
	dps     []*server
	// dpEnv is more of every data plane's environment.
	dpEnv []string
}

// startBudgetPlanes starts and bootstraps the control plane; name keeps
// the bootstrap token apart from other tests'. env is more of the control
// plane's environment, after (and so over) the set-up's own: GW_ROLE=all
// makes it serve inference too, as its own data plane (which runs
// batches, as every data plane does: docs/batches.md).
func startBudgetPlanes(t *testing.T, d storetest.Dialect, name string, env ...string) *budgetPlanes {
	t.Helper()
	p := &budgetPlanes{cpEnv: []string{"GW_ROLE=control-plane", "GW_DATA_DIR=" + t.TempDir(), "GW_BOOTSTRAP_TOKEN=setup_" + name,
		"GW_SECRET_KEY=" + strings.Repeat("cd", 32)}}
	// os/exec keeps the last value of a repeated variable.
	p.cpEnv = append(p.cpEnv, env...)
	if d == storetest.Postgres {
		u, err := storetest.URL(t, d)
		if err != nil {
			t.Fatal(err)
		}
		p.cpEnv = append(p.cpEnv, "GW_DATABASE_URL="+u)
	}
	p.cpAddr = freeAddr(t)
	p.cp = startServeAt(t, p.cpAddr, p.cpEnv...)
	// A failure's cause may be in a process's log only (a handler's
	// panic, which net/http logs and answers by closing the connection:
	// the caller sees EOF). Runs after the data planes are stopped.
	t.Cleanup(func() {
		if t.Failed() {
			for i, dp := range p.dps {
				dp.logNotable(t, fmt.Sprintf("data plane %d (%s)", i, dp.URL))
			}
			p.cp.logNotable(t, "control plane (the last one started)")
		}
	})
	ctx := context.Background()
	anon, _ := client.New(client.Options{Server: p.cp.URL})
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_" + name, Email: "ops@example.com", Password: "a long passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	p.token = boot.ManagementKey.Token
	p.owner, _ = client.New(client.Options{Server: p.cp.URL, Token: p.token})
	return p
}

// dataPlaneEnv is the environment of the remote data plane id with its
// state in dir, polling and beating every 200 ms (so a test's changes
// reach it quickly); it creates the data planes' management key the first
// time.
func (p *budgetPlanes) dataPlaneEnv(t *testing.T, id, dir string) []string {
	t.Helper()
	if p.dpToken == "" {
		k, err := p.owner.CreateManagementKey(context.Background(), client.InstanceScope(), wire.ManagementKeyCreate{
			Permissions: []string{"bundles.read", "usage.ingest", "data-planes.heartbeat", "policy-state.sync"}, Label: "data-plane"})
		if err != nil {
			t.Fatal(err)
		}
		p.dpToken = k.Token
	}
	return append([]string{"GW_ROLE=data-plane", "GW_CONTROL_PLANE_URL=" + p.cp.URL, "GW_TOKEN=" + p.dpToken, "GW_DATA_DIR=" + dir,
		"GW_POLL_INTERVAL=200ms", "GW_HEARTBEAT_INTERVAL=200ms", "GW_DATA_PLANE_ID=" + id}, p.dpEnv...)
}

// startDataPlanes starts a remote data plane per id, enrolls each for the
// default organization and waits until every one serves its current
// bundle. Call it once the organization's credentials, policies and keys
// exist.
func (p *budgetPlanes) startDataPlanes(t *testing.T, ids ...string) {
	t.Helper()
	for _, id := range ids {
		p.dps = append(p.dps, startServe(t, p.dataPlaneEnv(t, id, t.TempDir())...))
		enrollDataPlane(t, p.owner, id, "default")
	}
	ctx := context.Background()
	dpc, _ := client.New(client.Options{Server: p.cp.URL, Token: p.dpToken})
	waitFor(t, "the data planes to admit the current bundle", func() bool {
		b, _, _, err := dpc.PollBundles(ctx, ids[0], "")
		list, err2 := p.owner.ListDataPlanes(ctx)
		if err != nil || err2 != nil || len(b.Bundles) != 1 || len(list) < len(ids) {
			return false
		}
		for _, dp := range list {
			if dp.BundleVersions[b.Bundles[0].OrgID.String()] != b.Bundles[0].Version {
				return false
			}
		}
		return true
	})
}

// killControlPlane kills the control plane (SIGKILL) and waits for it to
// be gone.
func (p *budgetPlanes) killControlPlane() {
	_ = p.cp.cmd.Process.Kill()
	<-p.cp.done
}

// restartControlPlane starts a new control plane process on the same
// database and address.
func (p *budgetPlanes) restartControlPlane(t *testing.T) {
	p.cp = startServeAt(t, p.cpAddr, p.cpEnv...)
}

// stop stops the data planes, then the control plane, each in order
// (SIGTERM), failing the test if one does not exit cleanly.
func (p *budgetPlanes) stop(t *testing.T) {
	t.Helper()
	for _, dp := range p.dps {
		dp.stop(t)
	}
	p.cp.stop(t)
}
