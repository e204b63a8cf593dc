// Drive a django-mcp server with the official TypeScript SDK 2.x client
// (@modelcontextprotocol/client) in its default mode.
//
//   node ts2_client.mjs URL [--required-tool NAME]
//
// DJANGO_MCP_TS_CLIENT must name the installed package folder
// (.../node_modules/@modelcontextprotocol/client, see install.py). The 2.x line
// speaks 2026-07-28 too, but only when asked (versionNegotiation: { mode:
// 'auto' } or a pin): its default mode is 'legacy', a plain initialize +
// notifications/initialized, i.e. the handshake era (2025-11-25), with the
// Mcp-Session-Id kept. No option is passed here, so this is that default.
//
// Steps: connect, tools/list, tools/call echo {"text": "hi"}, the task tools:
// render {"scene": "x", "frames": 2} (task_support="optional": without the
// tasks extension it must run in the request and answer the plain text result)
// and the "required" tool (delete_everything, or --required-tool NAME), which
// must be refused with the JSON-RPC error -32021 naming
// io.modelcontextprotocol/tasks; last the session is terminated (DELETE) and
// the client closed. A failing tool-call step is recorded and the next one
// still runs (connect and tools/list stop the run).
// Prints one JSON summary on stdout; exit code 0 = every step passed.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

let url;
let requiredTool = 'delete_everything';
for (let i = 2; i < process.argv.length; i++) {
  if (process.argv[i] === '--required-tool') requiredTool = process.argv[++i];
  else url ??= process.argv[i];
}
const pkg = process.env.DJANGO_MCP_TS_CLIENT;
const summary = { client: '@modelcontextprotocol/client', url, steps: {}, ok: false };
const EXTENSION = 'io.modelcontextprotocol/tasks';
const RENDERED = "Rendered 'x' (2 frames).";
const TASK_REQUIRED = -32021;

function fail(step, message, detail) {
  const error = new Error(message);
  error.step = step;
  error.detail = detail;
  throw error;
}

function textOf(result) {
  return (result.content ?? [])
    .filter((block) => block.type === 'text')
    .map((block) => block.text)
    .join('\n');
}

// fatal: the run stops at a failure (connect, tools/list); otherwise the failure is recorded and the next step runs.
async function step(name, body, { fatal = false } = {}) {
  const started = Date.now();
  try {
    const detail = await body();
    summary.steps[name] = { ok: true, ms: Date.now() - started, ...detail };
  } catch (error) {
    summary.steps[name] = { ok: false, ms: Date.now() - started, error: `${error.name}: ${error.message}`, ...error.detail };
    if (error.code !== undefined) summary.steps[name].errorCode = error.code;
    error.step ??= name;
    if (fatal) throw error;
    if (summary.failedStep === undefined) {
      summary.failedStep = name;
      summary.error = `${error.name}: ${error.message}`;
    }
  }
}

async function main() {
  if (!url || !pkg || !requiredTool) {
    fail('setup', 'usage: DJANGO_MCP_TS_CLIENT=<client package folder> node ts2_client.mjs URL [--required-tool NAME]');
  }
  const manifest = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8'));
  summary.version = manifest.version;
  const entry = manifest.exports['.'].import.default; // ./dist/index.mjs: Client, the transports, the errors
  const { Client, StreamableHTTPClientTransport, ProtocolError } = await import(pathToFileURL(join(pkg, entry)).href);

  const client = new Client({ name: 'django-mcp-live-ts2', version: '1.0.0' }); // the default: no versionNegotiation
  const transport = new StreamableHTTPClientTransport(new URL(url));
  try {
    await step(
      'connect',
      async () => {
        await client.connect(transport);
        const server = client.getServerVersion();
        if (!server?.name) fail('connect', 'no serverInfo in the InitializeResult');
        return {
          era: client.getProtocolEra(),
          protocolVersion: client.getNegotiatedProtocolVersion(),
          sessionId: transport.sessionId ?? null,
          server,
          capabilities: client.getServerCapabilities(),
        };
      },
      { fatal: true },
    );
    await step(
      'list_tools',
      async () => {
        const { tools } = await client.listTools();
        const names = tools.map((tool) => tool.name);
        for (const wanted of ['echo', 'render', requiredTool]) {
          if (!names.includes(wanted)) fail('list_tools', `${wanted} is not listed (got ${names.join(', ')})`);
        }
        const execution = Object.fromEntries(
          tools.filter((tool) => tool.execution).map((tool) => [tool.name, tool.execution]),
        );
        return { count: names.length, execution };
      },
      { fatal: true },
    );
    await step('call_echo', async () => {
      const result = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
      const text = textOf(result);
      if (result.isError || text !== 'hi') fail('call_echo', `expected the text "hi", got ${JSON.stringify(result)}`);
      return { text };
    });
    await step('call_render', async () => {
      const result = await client.callTool({ name: 'render', arguments: { scene: 'x', frames: 2 } });
      const text = textOf(result);
      const detail = { isError: Boolean(result.isError), text };
      if (result.isError || text !== RENDERED) {
        fail('call_render', `expected the text ${JSON.stringify(RENDERED)}, got ${JSON.stringify(result)}`, detail);
      }
      return detail;
    });
    await step('call_task_required', async () => {
      let result;
      try {
        result = await client.callTool({ name: requiredTool, arguments: {} });
      } catch (error) {
        const detail = { tool: requiredTool, code: error.code, message: error.message, data: error.data };
        if (!(error instanceof ProtocolError)) fail('call_task_required', `not a JSON-RPC error: ${error}`, detail);
        if (error.code !== TASK_REQUIRED || !error.message.includes(EXTENSION)) {
          fail('call_task_required', `expected error ${TASK_REQUIRED} naming ${EXTENSION}, got ${error.code}: ${error.message}`, detail);
        }
        return detail;
      }
      fail('call_task_required', `expected error ${TASK_REQUIRED}, got the result ${JSON.stringify(result)}`, {
        tool: requiredTool,
        isError: Boolean(result.isError),
        text: textOf(result),
      });
    });
    await step('close', async () => {
      const sessionId = transport.sessionId;
      if (sessionId) await transport.terminateSession(); // DELETE with Mcp-Session-Id
      await client.close();
      return { deleted: Boolean(sessionId) };
    });
    summary.ok = summary.failedStep === undefined;
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
