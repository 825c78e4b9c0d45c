package server_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/gw-gateway/gw"

// pkg is what go list says of one package.
type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// listPackages runs go list on patterns, non-test files only: boundaries
// are about what the shipped binary links.
func listPackages(t *testing.T, patterns ...string) []pkg {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-json=ImportPath,Imports,Deps"}, patterns...)...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestImportBoundaries keeps the architecture's seams (DESIGN §2): a
// remote data plane never links the database, the client side links
// nothing of the server, the service layer knows nothing of HTTP, and
// policy evaluation does no I/O.
func TestImportBoundaries(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	rules := []struct {
		from      []string
		forbidden func(dep string) bool
		why       string
	}{
		{
			from: []string{module + "/server/dataplane", module + "/server/dataplane/spool", module + "/server/bundle", module + "/server/bundle/bundletest"},
			forbidden: func(dep string) bool {
				return dep == module+"/server/store" || strings.HasPrefix(dep, module+"/server/store/")
			},
			why: "the data plane serves from admitted bundles and never links the database",
		},
		{
			from: []string{module + "/server/api", module + "/server/publish"},
			forbidden: func(dep string) bool {
				return dep == module+"/server/dataplane" || strings.HasPrefix(dep, module+"/server/dataplane/")
			},
			why: "the management API reaches the data plane in process only through playground.Runner and publish.Admitter",
		},
		{
			from: []string{module + "/server/backend"},
			forbidden: func(dep string) bool {
				return dep == "net/http" || dep == module+"/server/api" || strings.HasPrefix(dep, module+"/server/api/")
			},
			why: "operations say what is wrong in the domain's words (backend.Kind); only the API knows HTTP statuses",
		},
		{
			from:      []string{module + "/client", module + "/tui", module + "/wire"},
			forbidden: func(dep string) bool { return strings.HasPrefix(dep, module+"/server/") },
			why:       "the client side links nothing of the server",
		},
	}
	for _, rule := range rules {
		for _, p := range listPackages(t, rule.from...) {
			for _, dep := range p.Deps {
				if rule.forbidden(dep) {
					t.Errorf("%s links %s: %s", p.ImportPath, dep, rule.why)
				}
			}
		}
	}

	// The CLI is a package per command group (gh's pkg/cmd/<group>): the
	// root (cli) links them all; a command package links no other command
	// package and not the root, and the shared ones (cli/cmdutil and below,
	// cli/config) link no command package, so a group can be read, tested
	// and moved on its own.
	shared := func(path string) bool {
		return path == module+"/cli/config" || path == module+"/cli/cmdutil" || strings.HasPrefix(path, module+"/cli/cmdutil/")
	}
	command := func(path string) bool {
		return strings.HasPrefix(path, module+"/cli/") && !shared(path)
	}
	for _, p := range listPackages(t, module+"/cli/...") {
		if p.ImportPath == module+"/cli" {
			continue
		}
		for _, dep := range p.Deps {
			switch {
			case dep == module+"/cli":
				t.Errorf("%s links %s: only the root links the command tree", p.ImportPath, dep)
			case command(dep) && (command(p.ImportPath) || shared(p.ImportPath)):
				t.Errorf("%s links %s: command packages do not import each other, and the shared ones import none", p.ImportPath, dep)
			}
		}
	}

	// gw guardrails (cli/guardrails) reads its files with the server's own
	// rules (backend.ParseGuardrail) but reaches the server only through
	// client/: it builds no HTTP request and links no store or API. gw
	// batches (cli/batches) likewise: a batch is read and cancelled on the
	// API, never in the database.
	for _, p := range listPackages(t, module+"/cli/guardrails", module+"/cli/batches") {
		for _, imp := range p.Imports {
			if imp == "net/http" || imp == module+"/server/store" || imp == module+"/server/api" {
				t.Errorf("%s imports %s: it talks to the server through client/", p.ImportPath, imp)
			}
		}
	}

	// server/egress is the one address policy for every URL gw calls, and
	// server/apidoc reflects the wire types into schemas: both stand
	// alone, linking no package of ours, so every caller may use them and
	// none of the callers' state leaks into them. The upstream transports
	// (server/providers) dial through egress. server/background (work that
	// gives way to requests) likewise: it knows threads, not what runs on
	// them. server/bodyread (a body read whole into one buffer) too: the
	// API's request bodies and the providers' answers both read with it.
	for _, p := range listPackages(t, module+"/server/egress", module+"/server/apidoc", module+"/server/background", module+"/server/bodyread") {
		for _, dep := range p.Deps {
			if strings.HasPrefix(dep, module+"/") {
				t.Errorf("%s links %s: it stands alone (every caller may use it)", p.ImportPath, dep)
			}
		}
	}
	for _, p := range listPackages(t, module+"/server/providers", module+"/server/guardrails/webhook", module+"/server/sso", module+"/server/archive") {
		if !slices.Contains(p.Imports, module+"/server/egress") {
			t.Errorf("%s does not import server/egress: every upstream connection is dialled under the egress policy", p.ImportPath)
		}
	}

	// server/archive (the payload archive's keys, spool and S3 client)
	// links no package of ours but server/egress: the data plane feeds it
	// and the control plane reads and sweeps through it, and neither's
	// state (the store, a keyring) reaches it; secrets come in the clear
	// in a Destination, opened by its caller.
	for _, p := range listPackages(t, module+"/server/archive") {
		for _, dep := range p.Deps {
			if strings.HasPrefix(dep, module+"/") && dep != module+"/server/egress" {
				t.Errorf("%s links %s: it links only server/egress", p.ImportPath, dep)
			}
		}
	}

	// server/policy and every package of ours it links may import no
	// package that does I/O. The standard library's fmt links os, so the
	// rule is on direct imports of our own packages.
	io := map[string]bool{
		"os": true, "os/exec": true, "net": true, "net/http": true, "database/sql": true, "io/fs": true,
		"path/filepath": true, "log": true, "log/slog": true, "syscall": true,
	}
	// server/tokens (counting what upstreams do not report) is held to the
	// same rule: it runs on the request path, on data planes too.
	// server/guardrails (the detectors and what a guardrail does with a
	// match) likewise: a webhook is called through the Hook its caller
	// passes. server/toolpolicy (the MCP gateway's pure core) too: the API,
	// the data plane and the CLI decide with it.
	// server/respcache (the response cache, issue 35) too: memory only.
	for _, root := range []string{module + "/server/policy", module + "/server/tokens", module + "/server/guardrails", module + "/server/toolpolicy",
		module + "/server/respcache"} {
		var ours []string
		for _, dep := range append([]string{root}, listPackages(t, root)[0].Deps...) {
			if strings.HasPrefix(dep, module+"/") {
				ours = append(ours, dep)
			}
		}
		for _, p := range listPackages(t, ours...) {
			for _, imp := range p.Imports {
				if io[imp] || strings.HasPrefix(imp, module+"/server/store") || strings.HasPrefix(imp, module+"/client") {
					t.Errorf("%s (linked by %s) imports %s: it does no I/O", p.ImportPath, root, imp)
				}
			}
		}
	}
}

// TestUpstreamRequestsInProviders keeps the upstream seam (issue 29):
// every upstream request is built and sent by server/providers' send,
// which authorizes it and gives it gw's trace context, so nothing else on
// the server builds an HTTP request. Test helpers (packages named …test)
// play upstreams and clients and are left out.
func TestUpstreamRequestsInProviders(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-json=ImportPath,Dir,GoFiles", module+"/server/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	builds := regexp.MustCompile(`http\.(NewRequest|NewRequestWithContext|Post|PostForm|Get|Head)\(`)
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath, Dir string
			GoFiles         []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		// server/guardrails/webhook calls a team's own guardrail service (not
		// an upstream: no provider credential, no trace context to carry),
		// signed with the detector's secret and dialled through egress.
		// server/mcpgw (issue 30): MCP is JSON-RPC over Streamable HTTP (an
		// initialize, a session header, event streams, a DELETE to end a
		// session), nothing like a provider's one authorized POST per call,
		// so its client builds its own requests. Its connections still dial
		// through server/egress: the data plane gives it
		// providers.NewGuardedHTTPClient (TestMCPGatewayDialsThroughEgress).
		// server/sso is the OpenID relying party (issue 31): its requests
		// (discovery, keys, the code's redemption) are the OpenID protocol,
		// made by go-oidc and x/oauth2 and its one key-set fetch, sent
		// unauthorized or with the client's own secret, to the identity
		// provider and nowhere else, over a client dialled through egress
		// (the rule above); providers' send has nothing to add to them.
		// server/oauth (issue 31, part 3) fetches a client's Client ID
		// Metadata Document: one unauthorized GET of a URL the client
		// names, size- and time-bounded, over a client dialled through
		// egress (TestOAuthStandsApart).
		if p.ImportPath == module+"/server/providers" || p.ImportPath == module+"/server/guardrails/webhook" ||
			p.ImportPath == module+"/server/mcpgw" || p.ImportPath == module+"/server/sso" || p.ImportPath == module+"/server/oauth" ||
			strings.HasSuffix(p.ImportPath, "test") {
			continue
		}
		for _, f := range p.GoFiles {
			src, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			// A batch line (issue 34) is a request to the plane's own
			// handler, served in process into memory and never sent on the
			// network: its upstream call is the handler's, through send. A
			// line its provider ran is recorded through the admission with
			// such an in-process request too, as is a batch's hold on the
			// budgets (batchnative.go batchAdmissionRequest, used by
			// recordNativeLine, holdGroup and batchhold.go: never sent;
			// the provider's batch API is called through send,
			// server/providers/batchapi.go).
			if p.ImportPath == module+"/server/dataplane" && (f == "batchrun.go" || f == "batchnative.go") {
				continue
			}
			if m := builds.Find(src); m != nil {
				t.Errorf("%s/%s calls %s: upstream requests are built only by server/providers (send)", p.ImportPath, f, m)
			}
		}
	}
}

// TestMCPGatewayDialsThroughEgress holds the MCP gateway's exception to
// the upstream seam to its terms: server/mcpgw links no store, no data
// plane and no API (the data plane calls it, through its Guard), and the
// data plane gives it the egress-guarded client every provider uses.
func TestMCPGatewayDialsThroughEgress(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	p := listPackages(t, module+"/server/mcpgw")[0]
	for _, dep := range p.Deps {
		for _, banned := range []string{"/server/store", "/server/dataplane", "/server/api", "/server/backend"} {
			if strings.HasPrefix(dep, module+banned) {
				t.Errorf("server/mcpgw links %s: it speaks MCP and nothing else", dep)
			}
		}
	}
	src, err := os.ReadFile(filepath.Join("dataplane", "mcp.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "mcpgw.Options{HTTP: providers.NewGuardedHTTPClient(p.egressPolicy)") {
		t.Error("server/dataplane/mcp.go must give the MCP gateway providers.NewGuardedHTTPClient(p.egressPolicy): every upstream connection dials through server/egress")
	}
}

// TestOneSendOneMeteringPath keeps the homes issue 29 made: in
// server/providers, only send.go sends an HTTP request (one upstream call
// for every kind); in server/dataplane, the inference-phase policies, the
// budget reservation and the usage sink are reached only through the
// admission (admission.go), which chat completions and every other
// endpoint that spends share, and whose stages (stages.go) are the one
// sequence of a model request. crash.go records the events of requests a
// crashed process left, at the next start.
func TestOneSendOneMeteringPath(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	rules := []struct {
		pkg     string
		pattern *regexp.Regexp
		allowed []string
		why     string
	}{
		{"/server/providers", regexp.MustCompile(`\.Do\(`), []string{"send.go"}, "upstream requests are sent only by send"},
		{"/server/dataplane", regexp.MustCompile(`policy\.PhaseInference`), []string{"admission.go"}, "the policies of a request are decided by admission.decide"},
		{"/server/dataplane", regexp.MustCompile(`budgets\.reserve\(`), []string{"admission.go"}, "budgets are reserved by admission.reserve"},
		{"/server/dataplane", regexp.MustCompile(`(usage|sink)\.Record\(`), []string{"admission.go", "crash.go"}, "a usage event is recorded by admission.finish alone"},
	}
	for _, r := range rules {
		out, err := exec.Command("go", "list", "-json=Dir,GoFiles", module+r.pkg).Output()
		if err != nil {
			t.Fatalf("go list: %v", err)
		}
		var p struct {
			Dir     string
			GoFiles []string
		}
		if err := json.Unmarshal(out, &p); err != nil {
			t.Fatal(err)
		}
		for _, f := range p.GoFiles {
			src, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			if m := r.pattern.Find(src); m != nil && !slices.Contains(r.allowed, f) {
				t.Errorf("%s/%s has %s: %s", r.pkg, f, m, r.why)
			}
		}
	}
}

// TestOAuthStandsApart keeps server/oauth (gw's OAuth authorization
// server's protocol: the access token's format, PKCE, resources, Client
// ID Metadata Documents) to its terms: the data plane links it to verify
// access tokens, so it links no store, no API, no backend and no data
// plane; and it dials documents through server/egress.
func TestOAuthStandsApart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	p := listPackages(t, module+"/server/oauth")[0]
	for _, dep := range p.Deps {
		if strings.HasPrefix(dep, module+"/") && dep != module+"/server/egress" {
			t.Errorf("server/oauth links %s: it links no package of ours but server/egress", dep)
		}
	}
	if !slices.Contains(p.Imports, module+"/server/egress") {
		t.Error("server/oauth does not import server/egress: client documents are fetched under the egress policy")
	}
}

// TestBatchFileIsPure keeps server/batchfile (a batch's input file,
// checked line by line against the size limits, issue 34) pure: it links
// no package of ours and imports nothing that does I/O, so both planes
// read a file the same way and its fuzz target covers every input.
func TestBatchFileIsPure(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	io := map[string]bool{"os": true, "os/exec": true, "net": true, "net/http": true, "database/sql": true, "io/fs": true,
		"path/filepath": true, "log": true, "log/slog": true, "syscall": true}
	for _, p := range listPackages(t, module+"/server/batchfile") {
		for _, dep := range p.Deps {
			if strings.HasPrefix(dep, module+"/") {
				t.Errorf("%s links %s: it links no package of ours", p.ImportPath, dep)
			}
		}
		for _, imp := range p.Imports {
			if io[imp] {
				t.Errorf("%s imports %s: it does no I/O", p.ImportPath, imp)
			}
		}
	}
}

// TestGwLinksNoTiktoken keeps tiktoken-go (issue 33, ninth round) where it
// belongs: server/tokens' tests (the reference its counts are held to) and
// server/tokens/internal/vocabgen (which writes the vocabularies from its
// copy). Linked into gw, its vocabularies would come back as code, and one
// call of it as a map the collector scans at every cycle.
func TestGwLinksNoTiktoken(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, p := range listPackages(t, module+"/cmd/gw") {
		for _, dep := range p.Deps {
			if strings.HasPrefix(dep, "github.com/tiktoken-go/") {
				t.Errorf("%s links %s: gw counts OpenAI's encodings with server/tokens", p.ImportPath, dep)
			}
		}
	}
}

// TestBatchStoreIsAnAdapter keeps server/batchstore (the control plane's
// files and batches as a dataplane.BatchStore, issue 34) an adapter and
// nothing more: no HTTP, no API, and only the all-in-one assembly
// (package server) links it, so a remote data plane never links the
// database through it.
func TestBatchStoreIsAnAdapter(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, p := range listPackages(t, module+"/server/batchstore") {
		for _, imp := range p.Imports {
			if imp == "net/http" || strings.HasPrefix(imp, module+"/server/api") || strings.HasPrefix(imp, module+"/server/backend") {
				t.Errorf("server/batchstore imports %s: it adapts the store and does nothing else", imp)
			}
		}
	}
	for _, p := range listPackages(t, module+"/...") {
		if p.ImportPath == module+"/server" || p.ImportPath == module+"/server/batchstore" {
			continue
		}
		if slices.Contains(p.Imports, module+"/server/batchstore") {
			t.Errorf("%s imports server/batchstore: only the all-in-one assembly (package server) gives a plane the store", p.ImportPath)
		}
	}
}

// TestSCIMIsPure keeps server/scim (SCIM 2.0's resource shapes, PATCH
// operations and filters, issue 31) pure: it links no package of ours and
// imports nothing that does I/O, so the handlers (server/api) and the
// operations (server/backend, which links no net/http) both use it.
func TestSCIMIsPure(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	io := map[string]bool{"os": true, "os/exec": true, "net": true, "net/http": true, "database/sql": true, "io/fs": true,
		"path/filepath": true, "log": true, "log/slog": true, "syscall": true}
	for _, p := range listPackages(t, module+"/server/scim") {
		for _, dep := range p.Deps {
			if strings.HasPrefix(dep, module+"/") {
				t.Errorf("%s links %s: it links no package of ours", p.ImportPath, dep)
			}
		}
		for _, imp := range p.Imports {
			if io[imp] {
				t.Errorf("%s imports %s: it does no I/O", p.ImportPath, imp)
			}
		}
	}
}

// TestCPUTestOnlyInTests keeps server/cputest (the benchmarks' reading of
// the process's CPU time) a test helper: it links no package of ours, and
// no package that is built into gw imports it, only tests.
func TestCPUTestOnlyInTests(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, p := range listPackages(t, module+"/server/cputest") {
		for _, dep := range p.Deps {
			if strings.HasPrefix(dep, module+"/") {
				t.Errorf("server/cputest links %s: it is a leaf", dep)
			}
		}
	}
	for _, p := range listPackages(t, module+"/...") {
		if slices.Contains(p.Imports, module+"/server/cputest") {
			t.Errorf("%s imports server/cputest, which only tests may", p.ImportPath)
		}
	}
}
