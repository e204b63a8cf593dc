// What the TypeScript client scripts share: the summary's steps, and the task tools' two calls.
//
// A script makes its summary ({client, url, steps: {}, ok: false}) and a step runner with
// stepRunner(summary); a step that throws stops the run unless it is { soft: true }, in which case
// the failure is recorded (the first one in failedStep / error) and the next step runs.

export const EXTENSION = 'io.modelcontextprotocol/tasks';
export const RENDERED = "Rendered 'x' (2 frames).";
export const TASK_REQUIRED = -32021;

export function fail(step, message, detail) {
  const error = new Error(message);
  error.step = step;
  error.detail = detail;
  throw error;
}

export function textOf(result) {
  return (result.content ?? [])
    .filter((block) => block.type === 'text')
    .map((block) => block.text)
    .join('\n');
}

export function stepRunner(summary) {
  return async function step(name, body, { soft = false } = {}) {
    const started = Date.now();
    try {
      const detail = await body();
      summary.steps[name] = { ok: true, ms: Date.now() - started, ...detail };
    } catch (error) {
      summary.steps[name] = { ok: false, ms: Date.now() - started };
      error.step ??= name;
      if (!soft) throw error;
      Object.assign(summary.steps[name], { error: `${error.name}: ${error.message}`, ...error.detail });
      if (error.code !== undefined) summary.steps[name].errorCode = error.code;
      if (summary.failedStep === undefined) {
        summary.failedStep = name;
        summary.error = `${error.name}: ${error.message}`;
      }
    }
  };
}

// A handshake-era client has no tasks extension: render (task_support="optional") must answer its plain
// result in the request, and the "required" tool must be refused with -32021 naming the extension.
export async function taskToolSteps(step, client, requiredTool, JsonRpcError) {
  await step(
    'call_render',
    async () => {
      const result = await client.callTool({ name: 'render', arguments: { scene: 'x', frames: 2 } });
      const text = textOf(result);
      const detail = { isError: Boolean(result.isError), text };
      if (result.isError || text !== RENDERED) {
        fail('call_render', `expected the text ${JSON.stringify(RENDERED)}, got ${JSON.stringify(result)}`, detail);
      }
      return detail;
    },
    { soft: true },
  );
  await step(
    'call_task_required',
    async () => {
      let result;
      try {
        // NB: 1.x callTool refuses a tool listed with execution.taskSupport "required" itself (-32600, no
        // request sent); the handshake-era listing has no execution.
        result = await client.callTool({ name: requiredTool, arguments: {} });
      } catch (error) {
        const detail = { tool: requiredTool, code: error.code, message: error.message, data: error.data };
        if (!(error instanceof JsonRpcError)) fail('call_task_required', `not a JSON-RPC error: ${error}`, detail);
        if (error.code !== TASK_REQUIRED || !error.message.includes(EXTENSION)) {
          fail('call_task_required', `expected error ${TASK_REQUIRED} naming ${EXTENSION}, got ${error.message}`, detail);
        }
        return detail;
      }
      fail('call_task_required', `expected error ${TASK_REQUIRED}, got the result ${JSON.stringify(result)}`, {
        tool: requiredTool,
        isError: Boolean(result.isError),
        text: textOf(result),
      });
    },
    { soft: true },
  );
}

// The last lines of every script: run main, print the summary, exit 0 only if every step passed.
export async function runAndReport(summary, main) {
  try {
    await main();
  } catch (error) {
    summary.failedStep = error.step ?? 'unknown';
    summary.error = `${error.name}: ${error.message}`;
    if (error.code !== undefined) summary.errorCode = error.code;
  }
  process.stdout.write(JSON.stringify(summary) + '\n');
  process.exitCode = summary.ok ? 0 : 1;
}
