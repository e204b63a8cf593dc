// Drive a django-mcp server with the official TypeScript SDK 1.x client (handshake era).
//
//   node ts_client.mjs URL
//
// DJANGO_MCP_TS_SDK must name the installed package folder
// (.../node_modules/@modelcontextprotocol/sdk, see install.py). Steps: connect
// with StreamableHTTPClientTransport (initialize + notifications/initialized,
// Mcp-Session-Id kept), tools/list, tools/call echo {"text": "hi"}, then an
// elicitation round trip: test_elicitation sends elicitation/create to this
// client mid-call, the handler accepts with a username and email, and the tool
// result must carry them. Last the session is terminated (DELETE).
// Prints one JSON summary on stdout; exit code 0 = every step passed.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const url = process.argv[2];
const sdk = process.env.DJANGO_MCP_TS_SDK;
const summary = { client: '@modelcontextprotocol/sdk', url, steps: {}, ok: false };
const ANSWER = { username: 'alice', email: 'alice@example.com' };

function fail(step, message) {
  const error = new Error(message);
  error.step = step;
  throw error;
}

function textOf(result) {
  return (result.content ?? [])
    .filter((block) => block.type === 'text')
    .map((block) => block.text)
    .join('\n');
}

async function step(name, body) {
  const started = Date.now();
  try {
    const detail = await body();
    summary.steps[name] = { ok: true, ms: Date.now() - started, ...detail };
  } catch (error) {
    summary.steps[name] = { ok: false, ms: Date.now() - started };
    error.step ??= name;
    throw error;
  }
}

async function main() {
  if (!url || !sdk) fail('setup', 'usage: DJANGO_MCP_TS_SDK=<sdk folder> node ts_client.mjs URL');
  summary.version = JSON.parse(readFileSync(join(sdk, 'package.json'), 'utf8')).version;
  const load = (path) => import(pathToFileURL(join(sdk, 'dist', 'esm', path)).href);
  const { Client } = await load('client/index.js');
  const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
  const { ElicitRequestSchema } = await load('types.js');

  const client = new Client(
    { name: 'django-mcp-live-ts', version: '1.0.0' },
    { capabilities: { elicitation: {} } },
  );
  const elicitations = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    elicitations.push(request.params);
    return { action: 'accept', content: ANSWER };
  });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  try {
    await step('connect', async () => {
      await client.connect(transport);
      const server = client.getServerVersion();
      if (!server?.name) fail('connect', 'no serverInfo in the InitializeResult');
      return {
        protocolVersion: transport.protocolVersion,
        sessionId: transport.sessionId ?? null,
        server,
        capabilities: client.getServerCapabilities(),
      };
    });
    await step('list_tools', async () => {
      const { tools } = await client.listTools();
      const names = tools.map((tool) => tool.name);
      for (const wanted of ['echo', 'test_elicitation']) {
        if (!names.includes(wanted)) fail('list_tools', `${wanted} is not listed (got ${names.join(', ')})`);
      }
      return { count: names.length };
    });
    await step('call_echo', async () => {
      const result = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
      const text = textOf(result);
      if (result.isError || text !== 'hi') fail('call_echo', `expected the text "hi", got ${JSON.stringify(result)}`);
      return { text };
    });
    await step('elicitation', async () => {
      const result = await client.callTool({ name: 'test_elicitation', arguments: { message: 'Who are you?' } });
      const text = textOf(result);
      if (elicitations.length !== 1) fail('elicitation', `expected 1 elicitation/create, got ${elicitations.length}`);
      if (result.isError || !text.includes(ANSWER.username) || !text.includes(ANSWER.email)) {
        fail('elicitation', `the tool result does not carry the answer: ${JSON.stringify(result)}`);
      }
      return { text, message: elicitations[0].message };
    });
    await step('terminate', async () => {
      const sessionId = transport.sessionId;
      if (sessionId) await transport.terminateSession(); // DELETE with Mcp-Session-Id
      return { deleted: Boolean(sessionId) };
    });
    summary.ok = true;
  } finally {
    await client.close().catch(() => {});
  }
}

try {
  await main();
} catch (error) {
  summary.failedStep = error.step ?? 'unknown';
  summary.error = `${error.name}: ${error.message}`;
  if (error.code !== undefined) summary.errorCode = error.code;
}
process.stdout.write(JSON.stringify(summary) + '\n');
process.exitCode = summary.ok ? 0 : 1;
