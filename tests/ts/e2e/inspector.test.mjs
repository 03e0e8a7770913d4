// The MCP Inspector's CLI mode (`@modelcontextprotocol/inspector`, pinned; issue #31) against
// the gateway over Streamable HTTP with a bearer header: lists the tools, calls one, and shows a
// tool error. It runs on Node 20 although it declares node >= 22.19 (npm warns EBADENGINE).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';

import { loadStackEnv } from './stack.mjs';

const stack = loadStackEnv();
const require = createRequire(import.meta.url);
const pkgPath = require.resolve('@modelcontextprotocol/inspector/package.json');
const pkg = JSON.parse(readFileSync(pkgPath, 'utf8'));
const BIN = path.join(path.dirname(pkgPath), pkg.bin['mcp-inspector']);
// The CLI keeps a server catalog (default ~/.mcp-inspector/mcp.json): one of its own here.
const scratch = mkdtempSync(path.join(os.tmpdir(), 'kosha-inspector-'));

/**
 * `mcp-inspector --cli <gateway> --transport http --header "Authorization: Bearer …" ARGS…`:
 * `{code, out, stderr}`, its exit status, its stdout parsed and its stderr (the CLI exits 5
 * after printing a tool error's result). Failures never repeat the command line: it holds the token.
 */
async function inspector(...args) {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [
      BIN, '--cli', stack.KOSHA_GATEWAY_URL, '--transport', 'http',
      '--header', `Authorization: Bearer ${stack.KOSHA_AGENT_TOKEN}`, ...args
    ], {
      env: { ...process.env, MCP_CATALOG_PATH: path.join(scratch, 'mcp.json'), NO_COLOR: '1' },
      timeout: 60_000,
      maxBuffer: 16 * 1024 * 1024
    });
    return { code: 0, out: JSON.parse(stdout), stderr };
  } catch (err) {
    if (typeof err.code !== 'number') throw new Error(`the Inspector did not finish: ${err.signal ?? err.code}`);
    let out;
    try { out = JSON.parse(err.stdout); } catch { out = undefined; }
    return { code: err.code, out, stderr: err.stderr };
  }
}

describe('the MCP Inspector CLI', () => {
  after(() => rmSync(scratch, { recursive: true, force: true }));

  it(`is version ${pkg.version}`, () => {
    assert.match(pkg.version, /^2\.12\./);
  });

  it('lists the tools, with schemas its --strict portability check finds nothing in', async () => {
    // --strict prints each finding on stderr ("Warning: tool …", "Error: tool …") and exits 6
    // on an error; a warning alone leaves exit 0, so stderr is checked too (issue 45).
    const { code, out, stderr } = await inspector('--method', 'tools/list', '--strict');
    assert.equal(code, 0, stderr);
    assert.doesNotMatch(stderr, /^(Warning|Error): tool /m, stderr);
    assert.doesNotMatch(stderr, /Schema portability/, stderr);
    const names = out.tools.map((t) => t.name);
    assert.ok(names.includes('get_transaction') && names.includes('get_service_health'), JSON.stringify(names));
    for (const tool of out.tools) assert.equal(tool.outputSchema?.type, 'object', tool.name);
  });

  it('calls a tool', async () => {
    const { code, out } = await inspector('--method', 'tools/call', '--tool-name', 'get_transaction',
      '--tool-arg', 'transaction_id=txn_000003');
    assert.equal(code, 0);
    assert.notEqual(out.isError, true, JSON.stringify(out));
    assert.equal(out.structuredContent.transaction.transaction_id, 'txn_000003');
  });

  it('shows a tool error as a result', async () => {
    const { code, out, stderr } = await inspector('--method', 'tools/call', '--tool-name', 'get_transaction',
      '--tool-arg', 'transaction_id=bogus');
    // Exit 5 (tool_is_error) after printing the result.
    assert.equal(code, 5, stderr);
    assert.match(stderr, /tool_is_error/);
    assert.equal(out.isError, true, JSON.stringify(out));
    assert.equal(out.structuredContent.error.code, 'invalid_argument');
  });
});
