// The MCP TypeScript SDK's OAuth client against gw (issue 31, part 3):
// run by e2e/oauth_mcp_test.go. The client is identified by its Client ID
// Metadata Document (an https URL, served by the Go test), discovers gw's
// authorization server through the MCP endpoint's 401 and protected
// resource metadata, authorizes with PKCE S256 and the resource indicator,
// and calls a tool through /inf/v1/mcp with the access token it got. The
// person's consent is given the way a browser would: the authorization
// URL opened with their session cookie, the consent form posted back.
// Then the refresh token rotates, and the old one, reused, is refused and
// revokes the grant.
//
// Environment: GW_URL (gw serve's origin), GW_SESSION (the person's
// svc_session), GW_CLIENT_ID (the document's URL), GW_REDIRECT (its
// redirect URI).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError, refreshAuthorization, discoverAuthorizationServerMetadata } from '@modelcontextprotocol/sdk/client/auth.js';

const gw = process.env.GW_URL;
const session = process.env.GW_SESSION;
const clientId = process.env.GW_CLIENT_ID;
const redirect = process.env.GW_REDIRECT;
const mcpURL = new URL(gw + '/inf/v1/mcp');

function check(cond, what) {
  if (!cond) throw new Error('check failed: ' + what);
}

// provider keeps what the SDK gives it in memory.
class Provider {
  constructor() {
    this.saved = {};
    this.authorizationURL = undefined;
  }
  get redirectUrl() { return redirect; }
  get clientMetadataUrl() { return clientId; }
  get clientMetadata() {
    return { client_name: 'gw e2e MCP client', redirect_uris: [redirect], grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  clientInformation() { return this.saved.client; }
  saveClientInformation(c) { this.saved.client = c; }
  tokens() { return this.saved.tokens; }
  saveTokens(t) { this.saved.tokens = t; }
  saveCodeVerifier(v) { this.saved.verifier = v; }
  codeVerifier() { return this.saved.verifier; }
  state() { return 'e2e-state-' + Math.random().toString(36).slice(2); }
  redirectToAuthorization(url) { this.authorizationURL = url; }
}

// consent plays the person's browser: open the authorization URL with the
// session cookie, post the consent form, and read the code from the
// redirect back to the client.
async function consent(authorizationURL) {
  const cookie = 'svc_session=' + session;
  const page = await fetch(authorizationURL, { headers: { cookie }, redirect: 'manual' });
  const html = await page.text();
  check(page.status === 200, 'consent page: ' + page.status + ' ' + html.slice(0, 300));
  const form = new URLSearchParams();
  for (const m of html.matchAll(/<input type="hidden" name="([a-z_]+)" value="([^"]*)">/g)) {
    form.set(m[1], m[2].replaceAll('&amp;', '&').replaceAll('&#43;', '+').replaceAll('&#34;', '"').replaceAll('&#39;', "'").replaceAll('&lt;', '<').replaceAll('&gt;', '>'));
  }
  const ws = html.match(/<option value="([0-9a-f-]{36})">/);
  check(ws, 'a workspace is offered');
  form.set('workspace', ws[1]);
  form.set('decision', 'approve');
  const post = await fetch(gw + '/oauth/authorize', { method: 'POST', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: form, redirect: 'manual' });
  check(post.status === 302, 'consent post: ' + post.status + ' ' + (await post.text()).slice(0, 300));
  const back = new URL(post.headers.get('location'));
  check(back.origin + back.pathname === redirect, 'redirected to the client: ' + back);
  check(back.searchParams.get('iss') === gw, 'iss in the authorization response (RFC 9207): ' + back.searchParams.get('iss'));
  check(back.searchParams.get('state') === authorizationURL.searchParams.get('state'), 'state returned');
  return back.searchParams.get('code');
}

const provider = new Provider();
const summary = {};

// 1. Without a token: 401, discovery, the authorization URL.
let transport = new StreamableHTTPClientTransport(mcpURL, { authProvider: provider });
let client = new Client({ name: 'gw-oauth-e2e', version: '1.0.0' });
try {
  await client.connect(transport);
  throw new Error('connected without authorization');
} catch (e) {
  check(e instanceof UnauthorizedError, 'UnauthorizedError, got ' + e);
}
const authURL = provider.authorizationURL;
check(authURL, 'the SDK asked to open an authorization URL');
check(authURL.searchParams.get('client_id') === clientId, 'CIMD client_id: ' + authURL.searchParams.get('client_id'));
check(authURL.searchParams.get('code_challenge_method') === 'S256', 'PKCE S256');
check(authURL.searchParams.get('resource') === mcpURL.href, 'resource indicator: ' + authURL.searchParams.get('resource'));
summary.authorize = authURL.origin + authURL.pathname;

// 2. Consent; the SDK redeems the code (PKCE verifier, resource).
const code = await consent(authURL);
await transport.finishAuth(code);
const first = provider.tokens();
check(first?.access_token?.startsWith('gwo_at_') && first.refresh_token, 'tokens: ' + JSON.stringify(first));

// 3. A tool through /inf/v1/mcp with that token.
transport = new StreamableHTTPClientTransport(mcpURL, { authProvider: provider });
client = new Client({ name: 'gw-oauth-e2e', version: '1.0.0' });
await client.connect(transport);
const tools = await client.listTools();
const echo = tools.tools.find((t) => t.name.includes('echo'));
check(echo, 'the echo tool is listed: ' + JSON.stringify(tools.tools.map((t) => t.name)));
const res = await client.callTool({ name: echo.name, arguments: { text: 'from the TypeScript SDK' } });
check(!res.isError && JSON.stringify(res.content).includes('from the TypeScript SDK'), 'tool result: ' + JSON.stringify(res));
summary.tool = echo.name;
await client.close();

// 4. Refresh rotation through the SDK, then the old refresh token reused:
// refused (invalid_grant), and the grant's tokens stop.
const metadata = await discoverAuthorizationServerMetadata(new URL(gw));
const rotated = await refreshAuthorization(new URL(gw), { metadata, clientInformation: { client_id: clientId },
  refreshToken: first.refresh_token, resource: mcpURL });
check(rotated.refresh_token && rotated.refresh_token !== first.refresh_token, 'a new refresh token');
let reused = 'accepted';
try {
  await refreshAuthorization(new URL(gw), { metadata, clientInformation: { client_id: clientId }, refreshToken: first.refresh_token, resource: mcpURL });
} catch (e) {
  reused = e.constructor.name + ': ' + e.message;
}
check(reused.startsWith('InvalidGrantError'), 'a reused refresh token is invalid_grant: ' + reused);
const after = await fetch(mcpURL, { method: 'POST', headers: { authorization: 'Bearer ' + rotated.access_token, 'content-type': 'application/json',
  accept: 'application/json, text/event-stream' },
  body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }) });
check(after.status === 401, 'the revoked grant\'s token is refused: ' + after.status);
summary.refresh = 'rotated; reuse revoked the grant';

console.log(JSON.stringify({ ok: true, ...summary }));
