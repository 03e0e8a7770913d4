// The running stack for the TypeScript end-to-end suite: stack.env (SPEC §2), an MCP client
// from the official TypeScript SDK, and `scripts/dev stop|start` for outages.
import { execFileSync } from 'node:child_process';
import assert from 'node:assert/strict';
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

/** `kosha-ops ARGS...` with the stack's AWS_* and KOSHA_* settings; its stdout, trimmed. */
export function ops(stack, ...args) {
  const env = { ...process.env };
  for (const [k, v] of Object.entries(stack)) if (k.startsWith('AWS_') || k.startsWith('KOSHA_')) env[k] = v;
  return execFileSync(stack.KOSHA_OPS, args, { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** A token for `clientId` with the agent role, minted with the stack's dev signing key. */
export function mintAgent(stack, clientId) {
  return ops(stack, 'token', 'mint', '--key', stack.KOSHA_DEV_SIGNING_KEY,
    '--issuer', stack.KOSHA_JWT_ISSUER, '--role', 'agent', '--client-id', clientId);
}

/**
 * A signed `X-Kosha-Chaos` value (SPEC §9) from `kosha-ops chaos sign`: `fault` on every attempt
 * (`p` 1) to `target`, valid 5 minutes; `ms` for `latency`. Honoured for the tester token only.
 */
export function chaosHeader(stack, target, fault, ms) {
  const args = ['chaos', 'sign', '--target', target, '--fault', fault, '--p', '1', '--ttl', '5m'];
  if (ms !== undefined) args.push('--ms', String(ms));
  return ops(stack, ...args);
}

/** One DynamoDB JSON call on the stack's emulator (which does not check signatures). */
export async function dynamo(stack, operation, body) {
  const r = await fetch(stack.AWS_ENDPOINT_URL, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-amz-json-1.0',
      'x-amz-target': `DynamoDB_20120810.${operation}`,
      authorization: `AWS4-HMAC-SHA256 Credential=test/20261202/${stack.AWS_REGION}/dynamodb/aws4_request, SignedHeaders=host, Signature=0`
    },
    body: JSON.stringify(body)
  });
  const text = await r.text();
  assert.equal(r.status, 200, text);
  return JSON.parse(text);
}

/** Empties `clientId`'s bucket (SPEC §8 `rl#<client_id>`): tokens 0, last written 5 s ahead, so
 * even the e2e stack's fast refill adds nothing until then. Returns the item's key. */
export async function drainBucket(stack, clientId) {
  const now = Date.now();
  const Key = { pk: { S: `rl#${clientId}` } };
  await dynamo(stack, 'PutItem', {
    TableName: stack.KOSHA_STATE_TABLE,
    Item: { ...Key, tokens: { N: '0' }, updated_at: { N: String(now + 5000) },
      expires_at: { N: String(Math.floor(now / 1000) + 3600) } }
  });
  return Key;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
