// The gateway through the official MCP TypeScript SDK client (issue 17, SPEC §3, §4).
//
// The SDK's Client.callTool validates `structuredContent` against the tool's `outputSchema`
// (from tools/list) and throws when it does not match, so every test here that gets a result
// back has had its structuredContent validated by the SDK: tool errors included. Each tool
// error must arrive as a result (`isError: true`), never as an exception.
//
// Needs a running stack (stack.env); scripts/test runs this inside its e2e stage:
//   node --test tests/ts/e2e/   (KOSHA_STACK_ENV=... for another stack than .dev/)
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { Ajv2020 } from 'ajv/dist/2020.js';

import { call, coreApiOutage, toolError } from './results.mjs';
import { connect, drainBucket, dynamo, loadStackEnv, mintAgent } from './stack.mjs';

const stack = loadStackEnv();

const AGENT_TOOLS = [
  'search_knowledge_base', 'get_transaction', 'list_transactions', 'get_service_health',
  'screen_entity', 'get_screening_result', 'raise_dispute', 'flag_transaction_for_review',
];
const ERROR_CODES = [
  'invalid_argument', 'not_found', 'conflict', 'deadline_exceeded',
  'dependency_unavailable', 'overloaded', 'rate_limited', 'internal'
];
// The formats JSON Schema 2020-12 defines (Validation §7.3); SPEC §3 allows no others.
const STANDARD_FORMATS = new Set([
  'date-time', 'date', 'time', 'duration', 'email', 'idn-email', 'hostname', 'idn-hostname',
  'ipv4', 'ipv6', 'uri', 'uri-reference', 'iri', 'iri-reference', 'uuid', 'uri-template',
  'json-pointer', 'relative-json-pointer', 'regex'
]);

/** Every `format` value anywhere in `schema`, with its JSON pointer. */
function formats(schema, at = '#') {
  if (Array.isArray(schema)) return schema.flatMap((s, i) => formats(s, `${at}/${i}`));
  if (schema === null || typeof schema !== 'object') return [];
  return Object.entries(schema).flatMap(([k, v]) =>
    k === 'format' && typeof v === 'string' ? [[at, v]] : formats(v, `${at}/${k}`));
}

describe('the gateway through the TypeScript SDK client', () => {
  let client;
  let tools;
  const warnings = [];

  before(async () => {
    client = await connect(stack);
    // Ajv (inside the SDK) reports schema problems such as unknown formats on the console.
    const saved = { warn: console.warn, log: console.log, error: console.error };
    for (const level of Object.keys(saved)) {
      console[level] = (...args) => { warnings.push(args.join(' ')); saved[level](...args); };
    }
    try {
      tools = (await client.listTools()).tools;
    } finally {
      Object.assign(console, saved);
    }
  });

  after(async () => {
    await client?.close();
  });

  describe('tools/list', () => {
    it('lists the agent tools, each with schemas and annotations', () => {
      assert.deepEqual(tools.map((t) => t.name), AGENT_TOOLS);
      for (const tool of tools) {
        assert.equal(tool.inputSchema.type, 'object', tool.name);
        assert.equal(tool.outputSchema?.type, 'object', tool.name);
        for (const hint of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint']) {
          assert.equal(typeof tool.annotations?.[hint], 'boolean', `${tool.name}: ${hint}`);
        }
      }
    });

    it('gives each tool an output validator in the SDK, compiled without complaint', () => {
      for (const tool of tools) {
        assert.ok(client.getToolOutputValidator(tool.name), `${tool.name}: the SDK validates its output`);
      }
      assert.deepEqual(warnings.filter((w) => /unknown format|strict mode|schema/i.test(w)), []);
    });

    it('uses only JSON Schema 2020-12 formats (SPEC §3)', () => {
      const offending = tools.flatMap((tool) => [
        ...formats(tool.inputSchema).map(([at, f]) => `${tool.name} inputSchema ${at}: "${f}"`),
        ...formats(tool.outputSchema).map(([at, f]) => `${tool.name} outputSchema ${at}: "${f}"`)
      ].filter((line) => !STANDARD_FORMATS.has(line.slice(line.lastIndexOf(': "') + 3, -1))));
      assert.deepEqual(offending, [], 'formats outside JSON Schema 2020-12');
    });

    it('declares each outputSchema as an anyOf admitting the error shape (SPEC §3)', () => {
      const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
      for (const tool of tools) {
        assert.ok(Array.isArray(tool.outputSchema.anyOf) && tool.outputSchema.anyOf.length >= 2,
          `${tool.name}: outputSchema.anyOf (result | error), got ${JSON.stringify(tool.outputSchema)}`);
        const { $schema: _, ...schema } = tool.outputSchema;
        const validate = ajv.compile(schema);
        for (const code of ERROR_CODES) {
          for (const error of [
            { code, message: 'm' },
            { code, message: 'm', retry_after_s: 3, dependency: 'core-api' }
          ]) {
            assert.ok(validate({ error }), `${tool.name} admits ${JSON.stringify({ error })}: ${ajv.errorsText(validate.errors)}`);
          }
        }
      }
    });
  });

  describe('one call of each tool', () => {
    it('search_knowledge_base', async () => {
      const r = await call(client, 'search_knowledge_base', { query: 'how do chargebacks work', top_k: 3 });
      assert.notEqual(r.isError, true, JSON.stringify(r.structuredContent));
      const { results, degraded } = r.structuredContent;
      assert.equal(typeof degraded, 'boolean');
      assert.ok(results.length >= 1 && results.length <= 3);
      for (const hit of results) {
        assert.match(hit.article_id, /^kb_\d{3,}$/);
        assert.equal(typeof hit.title, 'string');
        assert.equal(typeof hit.snippet, 'string');
        assert.equal(typeof hit.score, 'number');
      }
    });

    it('get_transaction', async () => {
      const r = await call(client, 'get_transaction', { transaction_id: 'txn_000001' });
      assert.notEqual(r.isError, true, JSON.stringify(r.structuredContent));
      const t = r.structuredContent.transaction;
      assert.equal(t.transaction_id, 'txn_000001');
      assert.match(t.account_id, /^acc_\d{4,}$/);
      assert.ok(Number.isInteger(t.amount_minor));
      for (const k of ['currency', 'merchant', 'category', 'status', 'booked_at']) {
        assert.equal(typeof t[k], 'string', k);
      }
    });

    it('list_transactions', async () => {
      const r = await call(client, 'list_transactions', { account_id: 'acc_0001', limit: 5 });
      assert.notEqual(r.isError, true, JSON.stringify(r.structuredContent));
      const { transactions, next_cursor } = r.structuredContent;
      assert.equal(transactions.length, 5);
      assert.ok(transactions.every((t) => t.account_id === 'acc_0001'));
      assert.equal(typeof next_cursor, 'string', 'acc_0001 has more than 5 transactions');
    });

    it('get_service_health', async () => {
      const r = await call(client, 'get_service_health');
      assert.notEqual(r.isError, true, JSON.stringify(r.structuredContent));
      assert.ok(['ok', 'degraded'].includes(r.structuredContent.status));
      const dep = r.structuredContent.dependencies['core-api'];
      assert.ok(dep, 'core-api in dependencies');
      assert.equal(typeof dep.breaker, 'string');
      assert.ok(Number.isInteger(dep.in_flight) && Number.isInteger(dep.capacity));
    });
  });

  describe('tool errors arrive as results the SDK validated', () => {
    it('invalid_argument: a malformed id, naming the field', async () => {
      const e = toolError(await call(client, 'get_transaction', { transaction_id: 'bogus' }), 'invalid_argument');
      assert.match(e.message, /transaction_id/);
    });

    it('invalid_argument: a value out of range, naming the field', async () => {
      const e = toolError(await call(client, 'list_transactions', { account_id: 'acc_0001', limit: 0 }), 'invalid_argument');
      assert.match(e.message, /limit/);
    });

    it('not_found: a well-formed transaction id that does not exist (txn_ + 6 digits)', async () => {
      toolError(await call(client, 'get_transaction', { transaction_id: 'txn_999999' }), 'not_found');
    });

    it('not_found: a well-formed transaction id with more than 6 digits (SPEC §3: at least 6)', async () => {
      toolError(await call(client, 'get_transaction', { transaction_id: 'txn_999999999' }), 'not_found');
    });

    it('not_found: a well-formed account id with more than 4 digits (SPEC §3: at least 4)', async () => {
      toolError(await call(client, 'list_transactions', { account_id: 'acc_99999' }), 'not_found');
    });

    it('rate_limited with retry_after_s from an empty bucket, a result and not an exception (SPEC §6)', async () => {
      const clientId = 'kosha-e2e-drained-ts';
      const token = mintAgent(stack, clientId);
      const Key = await drainBucket(stack, clientId);
      const before = await dynamo(stack, 'GetItem', { TableName: stack.KOSHA_STATE_TABLE, Key, ConsistentRead: true });
      // Two clients, two initialize handshakes: a new session does not reset the bucket.
      for (let i = 0; i < 2; i++) {
        const limited = await connect(stack, token);
        try {
          // tools/list is free, and gives the SDK the outputSchema it validates the error with.
          assert.ok((await limited.listTools()).tools.length > 0);
          const e = toolError(await call(limited, 'get_transaction', { transaction_id: 'txn_000001' }), 'rate_limited');
          assert.ok(Number.isInteger(e.retry_after_s) && e.retry_after_s >= 1, JSON.stringify(e));
          assert.match(e.message, /retry after/);
        } finally {
          await limited.close();
        }
      }
      const after = await dynamo(stack, 'GetItem', { TableName: stack.KOSHA_STATE_TABLE, Key, ConsistentRead: true });
      assert.deepEqual(after, before, 'refused calls wrote nothing');
    });

    it('dependency_unavailable with retry_after_s while core-api is stopped', async (t) => {
      await coreApiOutage(stack, client, { transaction_id: 'txn_000100' }, t);
    });
  });
});
