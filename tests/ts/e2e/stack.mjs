// The running stack for the TypeScript end-to-end suite: stack.env (SPEC §2), an MCP client
// from the official TypeScript SDK, and `scripts/dev stop|start` for outages.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** `KEY=value` lines of $KOSHA_STACK_ENV (default .dev/stack.env), as an object. */
export function loadStackEnv(file = process.env.KOSHA_STACK_ENV ?? path.join(ROOT, '.dev', 'stack.env')) {
  const env = {};
  for (const raw of readFileSync(file, 'utf8').split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#') || !line.includes('=')) continue;
    const i = line.indexOf('=');
    env[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return env;
}

/** A connected SDK client (initialize handshake done) for `token` at the gateway. */
export async function connect(stack, token = stack.KOSHA_AGENT_TOKEN) {
  const client = new Client({ name: 'kosha-ts-e2e', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(stack.KOSHA_GATEWAY_URL), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } }
  });
  await client.connect(transport);
  return client;
}

/** `scripts/dev ARGS...` against the stack's own dev dir (stop/start a function). */
export function dev(stack, ...args) {
  execFileSync(path.join(ROOT, 'scripts', 'dev'), args, {
    env: { ...process.env, KOSHA_DEV_DIR: stack.KOSHA_DEV_DIR },
    stdio: ['ignore', 'pipe', 'pipe']
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
