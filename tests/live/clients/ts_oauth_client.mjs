// Sign in to a django-mcp server with the official TypeScript SDK 1.x OAuth client, then use it.
//
//   node ts_oauth_client.mjs <sdk dir> URL --username U --password P [--verbose]
//
// <sdk dir> is the installed package folder (.../node_modules/@modelcontextprotocol/sdk) or the
// install prefix holding it (e.g. ~/.cache/django-mcp-clients/ts-sdk-1.32.2); without it,
// DJANGO_MCP_TS_SDK is used. The script imports nothing from this repository.
//
// The SDK does the OAuth work: StreamableHTTPClientTransport's authProvider meets the 401, and
// auth() runs protected-resource discovery, authorization-server metadata, dynamic client
// registration, the authorization request with PKCE S256 and `resource`, and (in
// transport.finishAuth(code)) the token request. This script supplies an in-memory
// OAuthClientProvider whose redirectToAuthorization plays the browser with fetch and a cookie jar:
// it opens the authorization URL, signs in on the login page, allows on the consent page and keeps
// the redirect's `code` (checking `state` and, as the metadata announces
// authorization_response_iss_parameter_supported, `iss`: SDK 1.x checks neither itself).
// Steps: connect (2025-11-25 handshake), whoami (must name the user), echo {"text": "hi"}, render
// {"scene": "x", "frames": 2} (1.x has no tasks extension, so the plain result is expected).
// Prints one JSON summary on the last stdout line; exit code 0 = every step passed.
// --verbose logs the browser's HTTP exchanges and the SDK's fetches on stderr.

import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const REDIRECT_URI = 'http://127.0.0.1:3030/callback';
const RENDERED = "Rendered 'x' (2 frames).";
const INPUT = /<input\b[^>]*>/gi;

const positional = [];
const options = { verbose: false };
for (let i = 2; i < process.argv.length; i++) {
  const arg = process.argv[i];
  if (arg === '--username') options.username = process.argv[++i];
  else if (arg === '--password') options.password = process.argv[++i];
  else if (arg === '--verbose') options.verbose = true;
  else positional.push(arg);
}
if (positional.length === 1 && process.env.DJANGO_MCP_TS_SDK) positional.unshift(process.env.DJANGO_MCP_TS_SDK);
const [sdkArg, url] = positional;

const summary = { client: '@modelcontextprotocol/sdk-oauth', ok: false };
const started = Date.now();
const log = (...parts) => options.verbose && console.error('[ts-oauth]', ...parts);

function sdkFolder(dir) {
  for (const candidate of [dir, join(dir, 'node_modules', '@modelcontextprotocol', 'sdk')]) {
    if (existsSync(join(candidate, 'dist', 'esm', 'client', 'auth.js'))) return candidate;
  }
  throw new Error(`no @modelcontextprotocol/sdk under ${dir}`);
}

function attribute(tag, name) {
  const match = tag.match(new RegExp(`\\b${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s>]+))`, 'i'));
  return match ? decodeEntities(match[1] ?? match[2] ?? match[3]) : undefined;
}

function decodeEntities(text) {
  return text
    .replace(/&#x([0-9a-f]+);/gi, (_, hex) => String.fromCodePoint(parseInt(hex, 16)))
    .replace(/&#(\d+);/g, (_, dec) => String.fromCodePoint(Number(dec)))
    .replace(/&quot;/g, '"')
    .replace(/&#39;|&apos;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

// The first form's action and its inputs: {name: value} of every input with a name, and the
// names of the inputs that are not hidden (password, submit, ...).
function parseForm(html) {
  const form = html.match(/<form\b[^>]*>/i);
  const fields = {};
  const types = {};
  for (const tag of html.match(INPUT) ?? []) {
    const name = attribute(tag, 'name');
    if (!name) continue;
    const type = (attribute(tag, 'type') ?? 'text').toLowerCase();
    types[name] = type;
    if (type === 'hidden') fields[name] = attribute(tag, 'value') ?? '';
  }
  return { action: form ? attribute(form[0], 'action') : undefined, hidden: fields, types };
}

// A user at a browser, with a cookie jar: signs in, then allows the client on the consent page.
class Browser {
  constructor(username, password) {
    this.username = username;
    this.password = password;
    this.cookies = new Map(); // one host: name -> value
    this.callback = undefined;
    this.exchanges = [];
  }

  async request(target, init = {}) {
    const headers = new Headers(init.headers);
    if (this.cookies.size) headers.set('Cookie', [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    const response = await fetch(target, { ...init, headers, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = attrs.some((a) => /^\s*max-age\s*=\s*(0|-\d+)\s*$/i.test(a));
      if (expired) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const exchange = `${init.method ?? 'GET'} ${new URL(target).pathname} -> ${response.status}`
      + (response.headers.get('location') ? ` Location: ${response.headers.get('location')}` : '');
    this.exchanges.push(exchange);
    log('browser', exchange);
    return response;
  }

  async authorize(authorizationUrl) {
    summary.authorization_url = `${authorizationUrl.origin}${authorizationUrl.pathname}`;
    this.sentState = authorizationUrl.searchParams.get('state');
    let target = authorizationUrl.href;
    let response = await this.request(target);
    for (let hop = 0; hop < 12; hop++) {
      const location = response.headers.get('location');
      if ([301, 302, 303, 307, 308].includes(response.status) && location) {
        if (location.startsWith(REDIRECT_URI)) {
          this.callback = new URL(location).searchParams;
          return;
        }
        target = new URL(location, target).href;
        response = await this.request(target);
        continue;
      }
      const page = await response.text();
      const form = parseForm(page);
      const fields = { ...form.hidden };
      const path = new URL(target).pathname;
      if (response.status === 200 && form.types.password === 'password') { // the login page
        if (summary.signed_in_at) throw new Error(`sign-in refused: the login page came back at ${target}`);
        Object.assign(fields, { username: this.username, password: this.password });
        summary.signed_in_at = path;
      } else if (response.status === 200 && /authorize|allow/i.test(page) && 'allow' in form.types) { // consent
        fields.allow = 'Authorize';
        summary.consented_at = path;
      } else {
        throw new Error(`unexpected page ${response.status} at ${target}: ${page.slice(0, 300)}`);
      }
      const action = new URL(form.action || target, target).href;
      response = await this.request(action, {
        method: 'POST',
        body: new URLSearchParams(fields),
        headers: { Referer: target, 'Content-Type': 'application/x-www-form-urlencoded' },
      });
      target = action;
    }
    throw new Error(`too many redirects: ${this.exchanges.join(' | ')}`);
  }

  // The code from the redirect, after checking what came with it.
  code(expectedIssuer) {
    const params = this.callback;
    if (!params) throw new Error('the authorization flow never reached the redirect URI');
    if (params.get('error')) throw new Error(`authorization error: ${params}`);
    const code = params.get('code');
    if (!code) throw new Error(`no authorization code in the redirect: ${params}`);
    if (params.get('state') !== this.sentState) {
      throw new Error(`state mismatch: sent ${this.sentState}, got ${params.get('state')}`);
    }
    const iss = params.get('iss');
    summary.iss = iss;
    if (expectedIssuer?.announced && iss !== expectedIssuer.issuer) {
      throw new Error(`iss mismatch: the metadata names ${expectedIssuer.issuer}, the redirect ${iss}`);
    }
    return code;
  }
}

// OAuthClientProvider, in memory.
class MemoryProvider {
  constructor(browser) {
    this.browser = browser;
    this._client = undefined;
    this._tokens = undefined;
    this._verifier = undefined;
    this.discovery = undefined;
  }

  get redirectUrl() {
    return REDIRECT_URI;
  }

  get clientMetadata() {
    return {
      client_name: 'django-mcp live test (TypeScript)',
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  state() {
    return randomBytes(16).toString('base64url');
  }

  clientInformation() {
    return this._client;
  }

  saveClientInformation(info) {
    this._client = info;
  }

  tokens() {
    return this._tokens;
  }

  saveTokens(tokens) {
    this._tokens = tokens;
  }

  saveCodeVerifier(verifier) {
    this._verifier = verifier;
  }

  codeVerifier() {
    if (!this._verifier) throw new Error('no code verifier saved');
    return this._verifier;
  }

  saveDiscoveryState(state) {
    this.discovery = state; // kept only to check the redirect's `iss`; discovery runs as the SDK likes
  }

  async redirectToAuthorization(authorizationUrl) {
    try {
      await this.browser.authorize(authorizationUrl);
    } catch (error) {
      error.step ??= 'authorize'; // the browser's failure, thrown through the SDK's connect
      throw error;
    }
  }
}

// The SDK's own fetches (discovery, registration, token, MCP), logged with --verbose.
const loggingFetch = async (input, init) => {
  const response = await fetch(input, init);
  log('sdk', init?.method ?? 'GET', String(input), '->', response.status,
    response.headers.get('www-authenticate') ? `WWW-Authenticate: ${response.headers.get('www-authenticate')}` : '');
  return response;
};

async function main() {
  if (!sdkArg || !url || !options.username || !options.password) {
    throw Object.assign(new Error('usage: node ts_oauth_client.mjs <sdk dir> URL --username U --password P'), { step: 'setup' });
  }
  const sdk = sdkFolder(sdkArg);
  summary.version = JSON.parse(readFileSync(join(sdk, 'package.json'), 'utf8')).version;
  const load = (path) => import(pathToFileURL(join(sdk, 'dist', 'esm', path)).href);
  const { Client } = await load('client/index.js');
  const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
  const { UnauthorizedError } = await load('client/auth.js');

  const browser = new Browser(options.username, options.password);
  const provider = new MemoryProvider(browser);
  const newTransport = () => new StreamableHTTPClientTransport(new URL(url), { authProvider: provider, fetch: loggingFetch });
  const newClient = () => new Client({ name: 'django-mcp-live-ts-oauth', version: '1.0.0' }, { capabilities: {} });

  let step = 'connect';
  let client = newClient();
  let transport = newTransport();
  try {
    try {
      await client.connect(transport);
      throw new Error('the server let the client in without signing in');
    } catch (error) {
      if (!(error instanceof UnauthorizedError)) throw error;
      log('connect: UnauthorizedError, the browser has been to the authorization server');
    }
    step = 'authorize';
    const metadata = provider.discovery?.authorizationServerMetadata;
    const code = browser.code({
      announced: metadata?.authorization_response_iss_parameter_supported === true,
      issuer: metadata?.issuer,
    });
    step = 'token';
    await transport.finishAuth(code);
    summary.registered_as = provider._client?.client_id ?? null;
    summary.scope = provider._tokens?.scope ?? null;

    step = 'connect';
    client = newClient();
    transport = newTransport();
    await client.connect(transport);
    summary.protocol_version = transport.protocolVersion ?? null;

    const text = (result) => (result.content ?? []).filter((b) => b.type === 'text').map((b) => b.text).join('');
    step = 'whoami';
    summary.whoami = text(await client.callTool({ name: 'whoami', arguments: {} }));
    if (summary.whoami !== options.username) throw new Error(`whoami answered ${JSON.stringify(summary.whoami)}`);
    step = 'echo';
    summary.echo = text(await client.callTool({ name: 'echo', arguments: { text: 'hi' } }));
    if (summary.echo !== 'hi') throw new Error(`echo answered ${JSON.stringify(summary.echo)}`);
    step = 'task';
    const rendered = await client.callTool({ name: 'render', arguments: { scene: 'x', frames: 2 } });
    summary.task = { status: rendered.isError ? 'failed' : 'completed', text: text(rendered) };
    if (rendered.isError || summary.task.text !== RENDERED) {
      throw new Error(`render answered ${JSON.stringify(rendered)}`);
    }
    await client.close();
  } catch (error) {
    error.step ??= step;
    error.exchanges = browser.exchanges;
    await client.close().catch(() => {});
    throw error;
  }
}

let timer;
try {
  await Promise.race([
    main(),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error('timed out after 60 s')), 60_000);
    }),
  ]);
  summary.ok = true;
} catch (error) {
  summary.ok = false;
  summary.error = `${error?.name ?? 'Error'}: ${error?.message ?? error}`;
  summary.failed_step = error?.step ?? 'unknown';
  if (error?.exchanges?.length) summary.browser = error.exchanges;
  summary.stack = String(error?.stack ?? '').slice(-2000);
} finally {
  clearTimeout(timer);
}
summary.ms = Date.now() - started;
process.stdout.write(`${JSON.stringify(summary)}\n`);
process.exit(summary.ok ? 0 : 1);
