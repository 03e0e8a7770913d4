// The 2.x MCP TypeScript client (`@modelcontextprotocol/client`, issue #31) on the running
// stack: a connected client in a negotiation mode, and a fetch that records the wire.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

/** The modes of `versionNegotiation` the suite runs in. */
export const MODES = {
  auto: { mode: 'auto' },
  pinned: { mode: { pin: '2026-07-28' } }
};

/**
 * A fetch that records each exchange: `{method, url, rpc, status, body}` (`rpc` the JSON-RPC
 * method sent, `body` the parsed JSON answer when there is one).
 */
export function recordingFetch() {
  const calls = [];
  const fetchFn = async (url, init = {}) => {
    const response = await fetch(url, init);
    let rpc;
    if (typeof init.body === 'string') {
      try { rpc = JSON.parse(init.body).method; } catch { rpc = undefined; }
    }
    let body;
    if ((response.headers.get('content-type') ?? '').includes('json')) {
      body = await response.clone().json().catch(() => undefined);
    }
    calls.push({ method: init.method ?? 'GET', url: String(url), rpc, status: response.status, body });
    return response;
  };
  return { calls, fetchFn };
}

/**
 * A connected 2.x client for the gateway in `mode` (a key of MODES), authenticated by `token`
 * or by `authProvider` (an OAuth client provider), sending through `fetchFn` when given and
 * with `headers` (e.g. `X-Kosha-Chaos`) on every request.
 */
export async function connect2(stack, mode, { token, authProvider, fetchFn, headers = {} } = {}) {
  const client = new Client({ name: 'kosha-ts-e2e-v2', version: '1.0.0' }, { versionNegotiation: MODES[mode] });
  const options = { fetch: fetchFn };
  options.requestInit = { headers: token ? { ...headers, Authorization: `Bearer ${token}` } : headers };
  if (authProvider) options.authProvider = authProvider;
  await client.connect(new StreamableHTTPClientTransport(new URL(stack.KOSHA_GATEWAY_URL), options));
  return client;
}
