// What every tool result must look like to a client (SPEC §3), for the TypeScript suites:
// the structuredContent repeated as one text block, and tool errors as results.
import assert from 'node:assert/strict';

import { dev, sleep } from './stack.mjs';

/**
 * Calls a tool with any SDK client (1.x or 2.x: both validate `structuredContent` against the
 * tool's `outputSchema` before `callTool` returns) and checks the text block.
 */
export async function call(client, name, args = {}) {
  const result = await client.callTool({ name, arguments: args });
  // SPEC §3: the same JSON as one text content block.
  const text = result.content?.find((c) => c.type === 'text');
  assert.ok(text, `${name}: a text content block`);
  assert.deepEqual(JSON.parse(text.text), result.structuredContent, `${name}: text block = structuredContent`);
  return result;
}

/** Asserts `result` is a tool error with `code` (SPEC §3) and returns its error object. */
export function toolError(result, code) {
  assert.equal(result.isError, true, `expected a tool error ${code}, got ${JSON.stringify(result.structuredContent)}`);
  const error = result.structuredContent?.error;
  assert.ok(error, `structuredContent.error in ${JSON.stringify(result.structuredContent)}`);
  assert.equal(error.code, code, JSON.stringify(error));
  assert.equal(typeof error.message, 'string');
  assert.ok(error.message.length > 0);
  return error;
}

/**
 * Stops core-api and calls `get_transaction` with `args` until the gateway answers
 * `dependency_unavailable` with `retry_after_s` and `dependency: "core-api"` (its breaker
 * open, SPEC §3, §10); starts core-api again and waits, at most 60 s, until the breaker has
 * closed through half-open, so the stack is left as found.
 */
export async function coreApiOutage(stack, client, args, t) {
  dev(stack, 'stop', 'core-api');
  let last;
  try {
    for (let i = 0; i < 40; i++) {
      last = toolError(await call(client, 'get_transaction', args), 'dependency_unavailable');
      if (last.retry_after_s !== undefined) break;
    }
    assert.ok(Number.isInteger(last.retry_after_s) && last.retry_after_s >= 1, JSON.stringify(last));
    assert.equal(last.dependency, 'core-api');
  } finally {
    dev(stack, 'start', 'core-api');
  }
  await coreApiSettled(client, args, t);
}

/**
 * Calls `get_transaction` with `args` until one succeeds with core-api's breaker closed (a
 * half-open breaker closes on its probes' successes), at most `seconds`; fails after that.
 */
export async function coreApiSettled(client, args, t, seconds = 60) {
  const breaker = async () =>
    (await call(client, 'get_service_health')).structuredContent.dependencies['core-api'].breaker;
  const until = Date.now() + seconds * 1000;
  while (Date.now() < until) {
    const r = await call(client, 'get_transaction', args);
    if (r.isError !== true && (await breaker()) === 'closed') return;
    await sleep(500);
  }
  t.diagnostic(`core-api breaker did not close within ${seconds} s`);
  assert.equal(await breaker(), 'closed');
}
