// A machine agent logging in the way Cognito lets machines (SPEC §5, issue #31), with the 2.x
// TypeScript client's ClientCredentialsProvider and nothing handed over but the client id and
// secret: the gateway's 401 names its protected-resource metadata, which names the local
// issuer, whose metadata (RFC 8414, or OpenID discovery) names the token endpoint; the
// client-credentials grant gives a token with `scope` (no groups), whose scopes are the
// caller's roles. The 401 names the agent scope (SPEC §5), and the 2.4 client requests the
// 401's scope before the one it is configured with (its `auth()` takes the challenge's scope,
// then `scopes_supported`, then `clientMetadata.scope`); the issuer refuses a scope the client
// may not have (`invalid_scope`, as Cognito does), so an operator-only machine client asks
// for its own scope through `prepareTokenRequest`, the provider's hook for the token request.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { ClientCredentialsProvider } from '@modelcontextprotocol/client';

import { call } from './results.mjs';
import { loadStackEnv } from './stack.mjs';
import { connect2, recordingFetch } from './v2.mjs';

const stack = loadStackEnv();

function claims(token) {
  return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8'));
}

/** A client-credentials provider that always asks for the scope it was configured with. */
class OwnScopeProvider extends ClientCredentialsProvider {
  constructor(options) {
    super(options);
    this.ownScope = options.scope;
  }

  prepareTokenRequest(scope) {
    return super.prepareTokenRequest(this.ownScope ?? scope);
  }
}

function provider(name, scope) {
  return new OwnScopeProvider({
    clientId: stack[`KOSHA_M2M_${name}_CLIENT_ID`],
    clientSecret: stack[`KOSHA_M2M_${name}_CLIENT_SECRET`],
    expectedIssuer: stack.KOSHA_JWT_ISSUER,
    scope
  });
}

describe('client credentials through the 2.x client', () => {
  it('an agent machine client discovers the issuer, gets a token and calls a tool', async () => {
    const wire = recordingFetch();
    const agent = provider('AGENT');
    const client = await connect2(stack, 'auto', { authProvider: agent, fetchFn: wire.fetchFn });
    try {
      const r = await call(client, 'get_transaction', { transaction_id: 'txn_000004' });
      assert.notEqual(r.isError, true, JSON.stringify(r.structuredContent));
      assert.equal(r.structuredContent.transaction.transaction_id, 'txn_000004');
    } finally {
      await client.close();
    }
    const gateway = new URL(stack.KOSHA_GATEWAY_URL);
    const steps = wire.calls.map((c) => `${c.method} ${c.url} ${c.status}`);
    const at = (pred, what) => {
      const i = wire.calls.findIndex(pred);
      assert.ok(i >= 0, `${what} in ${JSON.stringify(steps, null, 1)}`);
      return i;
    };
    const unauthorized = at((c) => c.url === gateway.href && c.status === 401, 'the gateway\'s 401');
    const metadata = at((c) => c.url === `${gateway.origin}/.well-known/oauth-protected-resource` && c.status === 200,
      'the protected-resource metadata');
    const issuer = new URL(stack.KOSHA_JWT_ISSUER);
    const metadataUrls = [
      `${issuer.origin}/.well-known/oauth-authorization-server${issuer.pathname}`,
      `${stack.KOSHA_JWT_ISSUER}/.well-known/openid-configuration`
    ];
    const discovery = at((c) => metadataUrls.includes(c.url) && c.status === 200,
      'the issuer\'s metadata (RFC 8414 or OpenID discovery)');
    const token = at((c) => c.url === stack.KOSHA_TOKEN_ENDPOINT && c.method === 'POST' && c.status === 200,
      'the token request');
    const authorized = at((c, i) => i > token && c.url === gateway.href && c.status === 200, 'an authorized MCP request');
    assert.ok(unauthorized < metadata && metadata < discovery && discovery < token && token < authorized, JSON.stringify(steps, null, 1));
    assert.deepEqual(wire.calls[metadata].body.authorization_servers, [stack.KOSHA_JWT_ISSUER]);

    const issued = claims(agent.tokens().access_token);
    assert.equal(issued.scope, 'kosha/agent');
    assert.equal(issued.client_id, stack.KOSHA_M2M_AGENT_CLIENT_ID);
    assert.equal(issued.token_use, 'access');
    assert.equal(issued['cognito:groups'], undefined);
  });

  it('an operator machine client sees only the operator tools', async () => {
    const operator = provider('OPERATOR', 'kosha/operator');
    const client = await connect2(stack, 'pinned', { authProvider: operator });
    try {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name), ['get_service_health']);
      assert.equal(claims(operator.tokens().access_token).scope, 'kosha/operator');
    } finally {
      await client.close();
    }
  });
});
