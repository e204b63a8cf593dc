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
// the client closed. A failing task-tool step is recorded and the next one
// still runs (the other steps stop the run).
// Prints one JSON summary on stdout; exit code 0 = every step passed.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import { fail, runAndReport, stepRunner, taskToolSteps, textOf } from './steps.mjs';

let url;
let requiredTool = 'delete_everything';
for (let i = 2; i < process.argv.length; i++) {
  if (process.argv[i] === '--required-tool') requiredTool = process.argv[++i];
  else url ??= process.argv[i];
}
const pkg = process.env.DJANGO_MCP_TS_CLIENT;
const summary = { client: '@modelcontextprotocol/client', url, steps: {}, ok: false };
const step = stepRunner(summary);

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
    );
    await step('call_echo', async () => {
      const result = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
      const text = textOf(result);
      if (result.isError || text !== 'hi') fail('call_echo', `expected the text "hi", got ${JSON.stringify(result)}`);
      return { text };
    });
    await taskToolSteps(step, client, requiredTool, ProtocolError);
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

await runAndReport(summary, main);
