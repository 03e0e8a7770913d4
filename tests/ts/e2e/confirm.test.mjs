// A person's confirmation (SPEC §5b, issue 47) through the 2.x MCP TypeScript client
// (`@modelcontextprotocol/client` 2.4) at 2026-07-28, against one more gateway of the stack with
// the example policy "Every dispute above 500.00 EUR needs its person's yes"
// (docs/policies/confirm-disputes.cedar appended to the built-in set; ./gateway.mjs starts it).
//
// A client given an `elicitation/create` handler (and the form elicitation capability) is asked
// the question inside the call and answers it through the handler; the SDK retries the call with
// the answer and the echoed requestState on its own. Checked: accepted (one dispute), declined
// (the tool error `declined`, no dispute), and a client without a handler
// (`confirmation_required`, nobody asked).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { call, toolError } from './results.mjs';
import { deployed, launchGateway } from './gateway.mjs';
import { loadStackEnv } from './stack.mjs';
import { MODES } from './v2.mjs';

const stack = loadStackEnv();

function psql(sql) {
  return execFileSync('psql', [stack.DATABASE_URL, '-tAc', sql], { encoding: 'utf8' }).trim();
}

/** Seeded EUR transactions over 600.00 EUR with no dispute, the highest ids first (the Python
 * suite takes from the same end, earlier in the run, and leaves them disputed). */
function undisputed() {
  return psql("SELECT t.transaction_id || ' ' || t.account_id FROM core.transactions t" +
    " WHERE t.currency = 'EUR' AND t.amount_minor > 60000 AND NOT EXISTS" +
    ' (SELECT 1 FROM core.disputes d WHERE d.transaction_id = t.transaction_id)' +
    ' ORDER BY t.transaction_id DESC LIMIT 10').split('\n').map((l) => {
    const [transaction_id, account_id] = l.split(' ');
    return { transaction_id, account_id };
  });
}

const disputes = (t) => Number(psql(`SELECT count(*) FROM core.disputes WHERE transaction_id = '${t.transaction_id}'`));
const over = (t) => ({ transaction_id: t.transaction_id, amount_minor: 60000, reason: `ts e2e confirm ${randomUUID()}` });

/**
 * A connected 2.x client (pinned to 2026-07-28) on `url` with the stack's agent token; with
 * `answer` (an ElicitResult) as the person, whose questions land in `asked`, when given.
 */
async function connect(url, answer) {
  const asked = [];
  const options = { versionNegotiation: MODES.pinned };
  if (answer) options.capabilities = { elicitation: { form: {} } };
  const client = new Client({ name: 'kosha-ts-e2e-confirm', version: '1.0.0' }, options);
  if (answer) {
    client.setRequestHandler('elicitation/create', async (request) => {
      asked.push(request.params);
      return answer;
    });
  }
  await client.connect(new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${stack.KOSHA_AGENT_TOKEN}` } }
  }));
  assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
  return { client, asked };
}

describe('a dispute over 500.00 EUR asks its person (2.x client)', () => {
  let gateway;
  let ledger;

  before(async () => {
    gateway = await launchGateway(stack, 'ts-confirm', deployed('confirm-disputes.cedar'));
    ledger = undisputed();
    assert.ok(ledger.length >= 3, 'three undisputed EUR transactions over 600.00');
  });

  after(async () => {
    await gateway?.stop();
  });

  it('accepted: the form is shown with the amount and the transaction, and one dispute is raised', async () => {
    const t = ledger.shift();
    const { client, asked } = await connect(gateway.url, { action: 'accept', content: { confirm: true } });
    try {
      const result = await call(client, 'raise_dispute', over(t));
      assert.notEqual(result.isError, true, JSON.stringify(result.structuredContent));
      assert.equal(result.structuredContent.created, true);
      assert.equal(asked.length, 1);
      assert.equal(asked[0].mode ?? 'form', 'form');
      assert.match(asked[0].message, /600\.00 EUR/);
      assert.ok(asked[0].message.includes(t.transaction_id), asked[0].message);
      assert.ok(asked[0].message.includes(t.account_id), asked[0].message);
      assert.equal(asked[0].requestedSchema.properties.confirm.type, 'boolean');
    } finally {
      await client.close();
    }
    assert.equal(disputes(t), 1);
  });

  it('declined: the tool error declined, and no dispute', async () => {
    const t = ledger.shift();
    const { client, asked } = await connect(gateway.url, { action: 'decline' });
    try {
      toolError(await call(client, 'raise_dispute', over(t)), 'declined');
      assert.equal(asked.length, 1);
    } finally {
      await client.close();
    }
    assert.equal(disputes(t), 0);
  });

  it('without an elicitation handler: confirmation_required, nobody asked', async () => {
    const t = ledger.shift();
    const { client } = await connect(gateway.url);
    try {
      const error = toolError(await call(client, 'raise_dispute', over(t)), 'confirmation_required');
      assert.match(error.message, /person/);
    } finally {
      await client.close();
    }
    assert.equal(disputes(t), 0);
  });
});
