// Drive a django-mcp server with the official TypeScript SDK 1.x client (handshake era).
//
//   node ts_client.mjs URL|stdio [--skip-elicitation] [--task-tools [--required-tool NAME]]
//
// stdio instead of a URL starts the server with StdioClientTransport, from the command in
// $DJANGO_MCP_STDIO (JSON: command, args, cwd, env).
// DJANGO_MCP_TS_SDK must name the installed package folder
// (.../node_modules/@modelcontextprotocol/sdk, see install.py). Steps: connect
// with StreamableHTTPClientTransport (initialize + notifications/initialized,
// Mcp-Session-Id kept), tools/list, tools/call echo {"text": "hi"}, then an
// elicitation round trip: test_elicitation sends elicitation/create to this
// client mid-call, the handler accepts with a username and email, and the tool
// result must carry them (--skip-elicitation leaves it out, for a server without
// test_elicitation such as the example project). --task-tools adds the task
// tools: render {"scene": "x", "frames": 2} (task_support="optional": without
// the tasks extension it must run in the request and answer the plain text
// result) and the "required" tool (delete_everything, or --required-tool NAME),
// which must be refused with the JSON-RPC error -32021 naming
// io.modelcontextprotocol/tasks; a failure of either is recorded and the next
// step still runs. Last the session is terminated (DELETE).
// Prints one JSON summary on stdout; exit code 0 = every step passed.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import { fail, runAndReport, stepRunner, taskToolSteps, textOf } from './steps.mjs';

let url;
const options = { elicitation: true, taskTools: false, requiredTool: 'delete_everything' };
for (let i = 2; i < process.argv.length; i++) {
  const arg = process.argv[i];
  if (arg === '--skip-elicitation') options.elicitation = false;
  else if (arg === '--task-tools') options.taskTools = true;
  else if (arg === '--required-tool') options.requiredTool = process.argv[++i];
  else url ??= arg;
}
const sdk = process.env.DJANGO_MCP_TS_SDK;
const summary = { client: '@modelcontextprotocol/sdk', url, steps: {}, ok: false };
const ANSWER = { username: 'alice', email: 'alice@example.com' };
const step = stepRunner(summary);

async function main() {
  if (!url || !sdk || !options.requiredTool) {
    fail('setup', 'usage: DJANGO_MCP_TS_SDK=<sdk folder> node ts_client.mjs URL [--skip-elicitation] [--task-tools [--required-tool NAME]]');
  }
  summary.version = JSON.parse(readFileSync(join(sdk, 'package.json'), 'utf8')).version;
  const load = (path) => import(pathToFileURL(join(sdk, 'dist', 'esm', path)).href);
  const { Client } = await load('client/index.js');
  const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
  const { ElicitRequestSchema, McpError } = await load('types.js');

  const client = new Client(
    { name: 'django-mcp-live-ts', version: '1.0.0' },
    { capabilities: { elicitation: {} } },
  );
  const elicitations = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    elicitations.push(request.params);
    return { action: 'accept', content: ANSWER };
  });
  const transport =
    url === 'stdio'
      ? new (await load('client/stdio.js')).StdioClientTransport(JSON.parse(process.env.DJANGO_MCP_STDIO))
      : new StreamableHTTPClientTransport(new URL(url));
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
      const wantedTools = ['echo'];
      if (options.elicitation) wantedTools.push('test_elicitation');
      if (options.taskTools) wantedTools.push('render', options.requiredTool);
      for (const wanted of wantedTools) {
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
    if (options.elicitation) {
      await step('elicitation', async () => {
        const result = await client.callTool({ name: 'test_elicitation', arguments: { message: 'Who are you?' } });
        const text = textOf(result);
        if (elicitations.length !== 1) fail('elicitation', `expected 1 elicitation/create, got ${elicitations.length}`);
        if (result.isError || !text.includes(ANSWER.username) || !text.includes(ANSWER.email)) {
          fail('elicitation', `the tool result does not carry the answer: ${JSON.stringify(result)}`);
        }
        return { text, message: elicitations[0].message };
      });
    }
    if (options.taskTools) await taskToolSteps(step, client, options.requiredTool, McpError);
    await step('terminate', async () => {
      const sessionId = transport.sessionId;
      if (sessionId) await transport.terminateSession(); // DELETE with Mcp-Session-Id
      return { deleted: Boolean(sessionId) };
    });
    summary.ok = summary.failedStep === undefined;
  } finally {
    await client.close().catch(() => {});
  }
}

await runAndReport(summary, main);
