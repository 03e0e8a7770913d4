// node:fs plus `globSync` (Node 22) from the npm `glob` package, for the conformance suite on
// Node 20 (see node20.mjs). glob's globSync(pattern, { cwd }) returns paths relative to cwd,
// as fs.globSync does.
import fs from 'node:fs';
export * from 'node:fs';
export { globSync } from 'glob';
export default fs;
