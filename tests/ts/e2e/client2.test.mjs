// The gateway through the 2.x MCP TypeScript client (`@modelcontextprotocol/client`, issue #31)
// in both negotiation modes: `auto` (probe `server/discover`, fall back to `initialize` only on
// a legacy answer) and `{pin: "2026-07-28"}` (no fallback). Beside the 1.32 SDK's suite
// (tools.test.mjs); the 2.x client also validates `structuredContent` against `outputSchema`.
//
// Each mode: the negotiated revision, `tools/list` with its caching hints (SEP-2549: `ttlMs`,
// `cacheScope: "private"`, honoured by the client's cache), one call of every agent tool, and a
// tool error of each of SPEC §3's codes: `invalid_argument`, `not_found`, `conflict` from the
// data; `rate_limited` from a drained bucket; `internal` from a malformed screening item;
// `deadline_exceeded` and `overloaded` from signed chaos faults (SPEC §9, the tester's token);
// `dependency_unavailable` in the last test, which stops core-api.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { call, coreApiOutage, coreApiSettled, toolError } from './results.mjs';
import { chaosHeader, drainBucket, dynamo, loadStackEnv, mintAgent } from './stack.mjs';
import { MODES, connect2, recordingFetch } from './v2.mjs';

const stack = loadStackEnv();

const AGENT_TOOLS = [
  'search_knowledge_base', 'get_transaction', 'list_transactions', 'get_service_health',
  'screen_entity', 'get_screening_result', 'raise_dispute', 'flag_transaction_for_review',
];
// A transaction no other suite disputes: its first dispute stays open.
const DISPUTED = 'txn_003131';

for (const mode of Object.keys(MODES)) {
  describe(`the 2.x client, versionNegotiation ${JSON.stringify(MODES[mode].mode)}`, () => {
    let client;
    let wire;

    before(async () => {
      wire = recordingFetch();
      client = await connect2(stack, mode, { token: stack.KOSHA_AGENT_TOKEN, fetchFn: wire.fetchFn });
    });

    after(async () => {
      await client?.close();
    });

    it('negotiates 2026-07-28 through server/discover, with no initialize', () => {
      assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
      assert.equal(client.getProtocolEra(), 'modern');
      assert.ok(client.getDiscoverResult(), 'a DiscoverResult');
      const rpcs = wire.calls.map((c) => c.rpc);
      assert.equal(rpcs[0], 'server/discover', JSON.stringify(rpcs));
      assert.ok(!rpcs.includes('initialize'), JSON.stringify(rpcs));
    });

    it('lists the agent tools with the caching hints, and the client honours them', async () => {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name), AGENT_TOOLS);
      const lists = () => wire.calls.filter((c) => c.rpc === 'tools/list');
      assert.equal(lists().length, 1);
      const result = lists()[0].body.result;
      assert.ok(Number.isInteger(result.ttlMs) && result.ttlMs >= 0, `ttlMs ${result.ttlMs}`);
      assert.equal(result.cacheScope, 'private');
      await client.listTools();
      // SEP-2549: ttlMs 0 is "immediately stale" (the next list goes to the wire); more is
      // served from the client's cache until it expires.
      assert.equal(lists().length, result.ttlMs === 0 ? 2 : 1, `ttlMs ${result.ttlMs}`);
    });

    it('search_knowledge_base', async () => {
      const r = await call(client, 'search_knowledge_base', { query: 'how do chargebacks work', top_k: 2 });
      assert.notEqual(r.isError, true, JSON.stringify(r.structuredContent));
      assert.ok(r.structuredContent.results.length >= 1 && r.structuredContent.results.length <= 2);
    });

    it('get_transaction and list_transactions', async () => {
      const t = await call(client, 'get_transaction', { transaction_id: 'txn_000002' });
      assert.equal(t.structuredContent.transaction.transaction_id, 'txn_000002');
      const l = await call(client, 'list_transactions', { account_id: 'acc_0003', limit: 3 });
      assert.equal(l.structuredContent.transactions.length, 3);
    });

    it('get_service_health', async () => {
      const r = await call(client, 'get_service_health');
      assert.ok(['ok', 'degraded'].includes(r.structuredContent.status));
      assert.ok(r.structuredContent.dependencies['core-api']);
    });

    it('screen_entity, then get_screening_result for its id', async () => {
      const s = await call(client, 'screen_entity', { name: 'Jane Example', country: 'GB' });
      assert.notEqual(s.isError, true, JSON.stringify(s.structuredContent));
      const { screening_id: id, status } = s.structuredContent;
      assert.ok(['clear', 'potential_match', 'deferred'].includes(status), status);
      const g = await call(client, 'get_screening_result', { screening_id: id });
      assert.notEqual(g.isError, true, JSON.stringify(g.structuredContent));
      assert.equal(g.structuredContent.screening_id, id);
    });

    it('raise_dispute, flag_transaction_for_review, and conflict for a second open dispute', async () => {
      const first = await call(client, 'raise_dispute', {
        transaction_id: DISPUTED, reason: 'not recognised', idempotency_key: 'ts-v2-dispute-1'
      });
      assert.notEqual(first.isError, true, JSON.stringify(first.structuredContent));
      assert.equal(first.structuredContent.status, 'open');
      const second = await call(client, 'raise_dispute', {
        transaction_id: DISPUTED, reason: 'not recognised', idempotency_key: `ts-v2-dispute-${mode}-2`
      });
      const e = toolError(second, 'conflict');
      assert.match(e.message, new RegExp(first.structuredContent.dispute_id));
      const review = await call(client, 'flag_transaction_for_review', {
        transaction_id: 'txn_003132', reason: 'unusual merchant', idempotency_key: 'ts-v2-review-1'
      });
      assert.equal(review.structuredContent.status, 'pending_review');
    });

    it('invalid_argument and not_found arrive as validated results', async () => {
      const bad = toolError(await call(client, 'list_transactions', { account_id: 'acc_0001', limit: 101 }), 'invalid_argument');
      assert.match(bad.message, /limit/);
      toolError(await call(client, 'get_transaction', { transaction_id: 'txn_999998' }), 'not_found');
      toolError(await call(client, 'get_screening_result', { screening_id: 'scr_00000000000000000000000000' }), 'not_found');
    });
  });
}

for (const mode of Object.keys(MODES)) {
  describe(`the 2.x client's tool errors from faults and state, versionNegotiation ${JSON.stringify(MODES[mode].mode)}`, () => {
    it('rate_limited with retry_after_s from a drained bucket', async () => {
      const clientId = 'kosha-e2e-drained-ts2';
      const client = await connect2(stack, mode, { token: mintAgent(stack, clientId) });
      try {
        await drainBucket(stack, clientId);
        const e = toolError(await call(client, 'get_transaction', { transaction_id: 'txn_000001' }), 'rate_limited');
        assert.ok(Number.isInteger(e.retry_after_s) && e.retry_after_s >= 1, JSON.stringify(e));
      } finally {
        await client.close();
      }
    });

    it('internal for a screening item the gateway cannot read, with nothing of it in the message', async () => {
      // A ULID-shaped id of its own per mode; an item with a status no writer uses.
      const id = `scr_01KTS${mode === 'auto' ? 'A' : 'P'}${'0'.repeat(20)}`;
      const now = Math.floor(Date.now() / 1000);
      await dynamo(stack, 'PutItem', {
        TableName: stack.KOSHA_STATE_TABLE,
        Item: {
          pk: { S: `screening#${id}` }, status: { S: 'garbled' }, request: { S: '{"name":"A"}' },
          created_at: { N: String(now) }, expires_at: { N: String(now + 3600) }
        }
      });
      const client = await connect2(stack, mode, { token: stack.KOSHA_AGENT_TOKEN });
      try {
        const e = toolError(await call(client, 'get_screening_result', { screening_id: id }), 'internal');
        assert.doesNotMatch(e.message, /garbled|screening#/, e.message);
      } finally {
        await client.close();
      }
    });

    it('overloaded with retry_after_s once core-api reads fill their bulkhead', async (t) => {
      // Every attempt waits 1 s inside the gateway's policy, holding its bulkhead slot (32 for
      // core-api reads, 10 ms queue wait): of 40 calls at once, those without a slot are
      // refused at once. A burst without the fault first, so the tester's bucket lease
      // (SPEC §6) follows a burst's demand and the faulted burst meets the bulkhead, not the
      // lease's first writes.
      const burst = (client) => Promise.all(Array.from({ length: 40 }, (_, i) =>
        call(client, 'get_transaction', { transaction_id: `txn_${String(200 + i).padStart(6, '0')}` })));
      const plain = await connect2(stack, mode, { token: stack.KOSHA_TESTER_TOKEN });
      const headers = { 'X-Kosha-Chaos': chaosHeader(stack, 'core-api', 'latency', 1000) };
      const client = await connect2(stack, mode, { token: stack.KOSHA_TESTER_TOKEN, headers });
      try {
        await coreApiSettled(plain, { transaction_id: 'txn_000200' }, t, 30);
        await burst(plain);
        const results = await burst(client);
        const refused = results.filter((r) => r.isError === true);
        assert.ok(refused.length >= 1 && refused.length <= 8, `${refused.length} refused`);
        for (const r of refused) {
          const e = toolError(r, 'overloaded');
          assert.ok(Number.isInteger(e.retry_after_s) && e.retry_after_s >= 1, JSON.stringify(e));
          assert.equal(e.dependency, 'core-api', JSON.stringify(e));
        }
      } finally {
        await client.close();
        await plain.close();
      }
    });

    it('deadline_exceeded when PostgreSQL is slower than the whole budget', async (t) => {
      // core-api sleeps each attempt to its deadline and answers 504 deadline_exceeded; the
      // gateway's get_transaction (budget 3 s) ends within its budget with the same code.
      const headers = { 'X-Kosha-Chaos': chaosHeader(stack, 'postgres', 'latency', 30000) };
      const plain = await connect2(stack, mode, { token: stack.KOSHA_TESTER_TOKEN });
      const client = await connect2(stack, mode, { token: stack.KOSHA_TESTER_TOKEN, headers });
      try {
        await coreApiSettled(plain, { transaction_id: 'txn_000003' }, t, 30);
        const started = Date.now();
        const e = toolError(await call(client, 'get_transaction', { transaction_id: 'txn_000003' }), 'deadline_exceeded');
        assert.ok(Date.now() - started < 4000, `${Date.now() - started} ms`);
        assert.equal(e.dependency, 'core-api', JSON.stringify(e));
      } finally {
        await client.close();
        await plain.close();
      }
    });
  });
}

describe('the 2.x client while core-api is stopped', () => {
  it('dependency_unavailable with retry_after_s and dependency, then recovery', async (t) => {
    const client = await connect2(stack, 'pinned', { token: stack.KOSHA_AGENT_TOKEN });
    try {
      await coreApiOutage(stack, client, { transaction_id: 'txn_000101' }, t);
    } finally {
      await client.close();
    }
  });
});
