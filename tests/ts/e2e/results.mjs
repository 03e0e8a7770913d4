// What every tool result must look like to a client (SPEC §3), for the TypeScript suites:
// the structuredContent repeated as one text block, and tool errors as results.
import assert from 'node:assert/strict';

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
