// One more mcp-gateway on the running stack with its own policy file (SPEC §5a–§5b), as
// tests/e2e/gateways.py starts them for the Python suites: the stack's debug binary
// (`cmd/mcp-gateway.bin` of the stack's dev dir) with the stack gateway's whole environment
// (`cmd/mcp-gateway.env`, NUL-separated; the issuer, the AWS emulator's endpoints, the chaos and
// confirmation secrets' ids), without its span export, on a free port, with
// `KOSHA_POLICY_FILE` and any further settings. The stack's own gateway keeps the built-in set.
import { spawn } from 'node:child_process';
import { openSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';

import { ROOT } from './stack.mjs';

/** The built-in policy set followed by `docs/policies/<example>`: the file an operator deploys. */
export function deployed(example) {
  return readFileSync(path.join(ROOT, 'crates', 'authz', 'src', 'builtin.cedar'), 'utf8') +
    readFileSync(path.join(ROOT, 'docs', 'policies', example), 'utf8');
}

/** A free TCP port on loopback. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** The stack gateway's environment, without OTEL_* (these gateways' spans are nobody's). */
function gatewayEnv(stack) {
  const raw = readFileSync(path.join(stack.KOSHA_DEV_DIR, 'cmd', 'mcp-gateway.env'), 'utf8');
  const env = {};
  for (const item of raw.split('\0')) {
    const i = item.indexOf('=');
    if (i > 0 && !item.startsWith('OTEL_')) env[item.slice(0, i)] = item.slice(i + 1);
  }
  return env;
}

/**
 * Starts the stack's gateway binary as `name` with `policyText` as its policy file and `env` as
 * further settings, and waits (at most 20 s) until it answers /healthz.
 * Returns `{url, log, stop}`: its MCP endpoint, its log file and an async stop.
 */
export async function launchGateway(stack, name, policyText, env = {}) {
  const policyFile = path.join(stack.KOSHA_DEV_DIR, `policy-${name}.cedar`);
  writeFileSync(policyFile, policyText);
  const port = await freePort();
  const log = path.join(stack.KOSHA_DEV_DIR, 'logs', `policy-${name}.log`);
  const out = openSync(log, 'w');
  const binary = readFileSync(path.join(stack.KOSHA_DEV_DIR, 'cmd', 'mcp-gateway.bin'), 'utf8').trim();
  const child = spawn(binary, [], {
    env: { ...gatewayEnv(stack), ...env, KOSHA_LISTEN: `127.0.0.1:${port}`, KOSHA_POLICY_FILE: policyFile },
    stdio: ['ignore', out, out]
  });
  let exited = null;
  child.once('exit', (code, signal) => { exited = signal ?? code; });
  // Never outlives this process, however it ends.
  process.once('exit', () => { if (exited === null) child.kill('SIGKILL'); });
  const base = `http://127.0.0.1:${port}`;
  const end = Date.now() + 20_000;
  for (;;) {
    if (exited !== null) throw new Error(`gateway ${name} exited (${exited}): ${readFileSync(log, 'utf8').slice(-2000)}`);
    try {
      if ((await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(1000) })).ok) break;
    } catch { /* not up yet */ }
    if (Date.now() > end) {
      child.kill('SIGKILL');
      throw new Error(`gateway ${name} did not answer /healthz in 20 s: ${readFileSync(log, 'utf8').slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url: `${base}/mcp`,
    log,
    stop: () => new Promise((resolve) => {
      if (exited !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
      setTimeout(() => { child.kill('SIGKILL'); resolve(); }, 5000).unref();
    })
  };
}
