// Module resolution hooks registered by node20.mjs (they run on the loader thread). Only
// imports made by the conformance suite's own bundle are redirected; the shims' own imports
// of node:fs and undici resolve normally.
const SUITE = '/node_modules/@modelcontextprotocol/conformance/';
let options = { polyfillGlobSync: false, injectAuth: false };

export function initialize(data) {
  options = { ...options, ...data };
}

export async function resolve(specifier, context, next) {
  const fromSuite = context.parentURL?.includes(SUITE);
  if (fromSuite && options.polyfillGlobSync && (specifier === 'fs' || specifier === 'node:fs')) {
    return { url: new URL('./shim-fs.mjs', import.meta.url).href, shortCircuit: true };
  }
  if (fromSuite && options.injectAuth && specifier === 'undici') {
    return { url: new URL('./shim-undici.mjs', import.meta.url).href, shortCircuit: true };
  }
  return next(specifier, context);
}
