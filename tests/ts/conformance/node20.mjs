// Preload for running @modelcontextprotocol/conformance under Node 20 against the gateway:
//   node --import ./tests/ts/conformance/node20.mjs node_modules/@modelcontextprotocol/conformance/dist/index.js server ...
//
// 1. Node 20 lacks `fs.globSync` (added in Node 22), which the suite's bundle imports by name
//    from 'fs' (only its `tier-check` command calls it). An ESM named import of a missing
//    export fails at link time, before any code runs, so patching the `fs` object is too late:
//    a resolve hook (hooks.mjs) points the suite's own imports of 'fs' at a module that
//    re-exports node:fs plus `globSync` from the npm `glob` package. On Node >= 22 nothing is
//    registered. The suite's bundle is built for node20 (tsdown --target node20), so
//    `fs.globSync` is the only Node 22 API it needs.
// 2. The suite's `server` command has no option for request headers, and Kosha's gateway
//    answers 401 without a bearer token. With KOSHA_CONFORMANCE_URL and
//    KOSHA_CONFORMANCE_TOKEN set, every request the suite sends to that URL's origin gets
//    `Authorization: Bearer <token>` unless it already carries an Authorization header. The
//    suite sends requests three ways, and each is covered: global fetch (the SDK client
//    transport and most raw probes), node:http's request (http-standard-headers and the
//    SEP-2243 header scenarios, to keep header casing) and undici's request
//    (dns-rebinding-protection, to set Host); the last through hooks.mjs as well.
//    Nothing else about a request is changed.
import fs from 'node:fs';
import http from 'node:http';
import { register } from 'node:module';

const url = process.env.KOSHA_CONFORMANCE_URL;
const token = process.env.KOSHA_CONFORMANCE_TOKEN;
const target = url ? new URL(url) : undefined;

register('./hooks.mjs', import.meta.url, {
  data: { polyfillGlobSync: typeof fs.globSync !== 'function', injectAuth: Boolean(target && token) }
});

if (target && token) {
  const bearer = `Bearer ${token}`;
  const sameOrigin = (u) => u.protocol === target.protocol && u.host === target.host;
  globalThis.__koshaConformanceAuth = { sameOrigin, bearer };

  const originalFetch = globalThis.fetch;
  globalThis.fetch = function fetchWithAuth(input, init) {
    const request = input instanceof Request ? input : undefined;
    const u = new URL(request ? request.url : String(input));
    if (!sameOrigin(u)) return originalFetch(input, init);
    const headers = new Headers(init?.headers ?? request?.headers);
    if (!headers.has('authorization')) headers.set('authorization', bearer);
    return originalFetch(input, { ...init, headers });
  };

  // http.request(options[, cb]) and http.request(url[, options][, cb]).
  const originalRequest = http.request;
  http.request = function requestWithAuth(...args) {
    const [first, second] = args;
    let options;
    if (typeof first === 'string' || first instanceof URL) {
      const u = new URL(first);
      if (!sameOrigin(u)) return originalRequest.apply(this, args);
      options = typeof second === 'object' && second !== null ? second : undefined;
      const merged = { ...options, headers: withAuth(options?.headers) };
      return options
        ? originalRequest.call(this, first, merged, ...args.slice(2))
        : originalRequest.call(this, first, merged, ...args.slice(1));
    }
    options = first ?? {};
    const host = options.host ?? options.hostname ?? 'localhost';
    const port = options.port ?? (target.protocol === 'https:' ? 443 : 80);
    const u = new URL(`${target.protocol}//${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`);
    if (!sameOrigin(u)) return originalRequest.apply(this, args);
    return originalRequest.call(this, { ...options, headers: withAuth(options.headers) }, ...args.slice(1));
  };

  function withAuth(headers) {
    if (Array.isArray(headers)) {
      const has = headers.some((h, i) => i % 2 === 0 && String(h).toLowerCase() === 'authorization');
      return has ? headers : [...headers, 'Authorization', bearer];
    }
    const out = { ...headers };
    if (!Object.keys(out).some((k) => k.toLowerCase() === 'authorization')) out.Authorization = bearer;
    return out;
  }
}
