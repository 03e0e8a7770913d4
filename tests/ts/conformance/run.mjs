#!/usr/bin/env node
// Runs the official MCP conformance suite (@modelcontextprotocol/conformance, pinned in
// tests/ts/package.json) against the gateway of a running stack, at each protocol revision,
// and compares the failed checks with baseline.txt (SPEC §3, issue 17).
//
//   node tests/ts/conformance/run.mjs [--revision 2025-11-25] [--revision 2026-07-28]
//        [--out DIR] [--strict-baseline]
//
// The stack comes from $KOSHA_STACK_ENV (default .dev/stack.env): KOSHA_GATEWAY_URL and
// KOSHA_AGENT_TOKEN, which node20.mjs adds to every request the suite sends to the gateway.
// Each revision runs `conformance server --requirements REV -o OUT/REV` (the scenarios that
// revision requires, plus its not-scored ones, on that revision's wire); its log is
// OUT/REV.log and every scenario's checks are OUT/REV/server-<scenario>-<time>/checks.json.
//
// Exit 1 when a check fails (status FAILURE) that the baseline does not list, or a scenario
// crashes unlisted. A baseline entry none of whose checks failed is reported as stale (it
// now passes: remove it); with --strict-baseline that fails the run too. WARNINGs (SHOULDs)
// are listed, never fatal.
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { loadStackEnv } from '../e2e/stack.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const TS = path.resolve(HERE, '..');
const ROOT = path.resolve(TS, '../..');
const SUITE = path.join(TS, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const REVISIONS = ['2025-11-25', '2026-07-28'];
const WIRE_CHECK = 'wire-schema-valid';
/** Longest one revision's run may take (KOSHA_CONFORMANCE_TIMEOUT_S, default 600). */
const TIMEOUT_S = Number(process.env.KOSHA_CONFORMANCE_TIMEOUT_S ?? 600);

function parseArgs(argv) {
  const opts = { revisions: [], out: undefined, strict: false, baseline: path.join(HERE, 'baseline.txt') };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--revision') opts.revisions.push(argv[++i]);
    else if (a === '--out') opts.out = argv[++i];
    else if (a === '--baseline') opts.baseline = argv[++i];
    else if (a === '--strict-baseline') opts.strict = true;
    else { console.error(`unknown argument: ${a}`); process.exit(2); }
  }
  if (opts.revisions.length === 0) opts.revisions = REVISIONS;
  for (const r of opts.revisions) {
    if (!REVISIONS.includes(r)) { console.error(`unknown revision ${r}; known: ${REVISIONS.join(', ')}`); process.exit(2); }
  }
  return opts;
}

/**
 * baseline.txt: one entry a line, `REVISION SCENARIO[:CHECK-ID] REASON` (whitespace
 * separated; the reason is the rest of the line and required). `#` starts a comment line.
 * A SCENARIO entry allows every check of that scenario to fail; SCENARIO:CHECK-ID only that
 * check.
 */
export function loadBaseline(file) {
  const entries = [];
  readFileSync(file, 'utf8').split('\n').forEach((raw, n) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const m = /^(\S+)\s+(\S+)\s+(.+)$/.exec(line);
    if (!m) throw new Error(`${file}:${n + 1}: want 'REVISION SCENARIO[:CHECK-ID] REASON', got: ${line}`);
    const [, revision, entry, reason] = m;
    if (!REVISIONS.includes(revision)) throw new Error(`${file}:${n + 1}: unknown revision ${revision}`);
    const colon = entry.indexOf(':');
    entries.push({
      revision,
      scenario: colon < 0 ? entry : entry.slice(0, colon),
      check: colon < 0 ? undefined : entry.slice(colon + 1),
      reason,
      text: entry,
      matched: false
    });
  });
  return entries;
}

function runSuite(revision, url, token, out) {
  const dir = path.join(out, revision);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const log = createWriteStream(path.join(out, `${revision}.log`));
  const args = ['--import', path.join(HERE, 'node20.mjs'), SUITE, 'server', '--url', url,
    '--requirements', revision, '-o', dir];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: TS,
      env: { ...process.env, KOSHA_CONFORMANCE_URL: url, KOSHA_CONFORMANCE_TOKEN: token, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe']
    });
    child.stdout.pipe(log, { end: false });
    child.stderr.pipe(log, { end: false });
    // Bounded: a gateway that stops answering must not hold CI (the suite's own requests
    // time out after 10-30 s each, but there are hundreds).
    const limit = setTimeout(() => {
      log.write(`\nrun.mjs: killed after ${TIMEOUT_S} s\n`);
      child.kill('SIGKILL');
    }, TIMEOUT_S * 1000);
    child.on('error', reject);
    child.on('close', (code) => { clearTimeout(limit); log.end(); resolve({ code, dir }); });
  });
}

/** Every scenario run: { scenario, checks } ([] plus crashed=true when it wrote no checks). */
function readResults(dir) {
  const results = [];
  for (const name of readdirSync(dir).sort()) {
    const m = /^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/.exec(name);
    if (!m) continue;
    const file = path.join(dir, name, 'checks.json');
    if (!existsSync(file)) { results.push({ scenario: m[1], checks: [], crashed: true }); continue; }
    results.push({ scenario: m[1], checks: JSON.parse(readFileSync(file, 'utf8')) });
  }
  return results;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (!existsSync(SUITE)) {
    console.error(`conformance suite not installed at ${SUITE} (scripts/lib/common.sh ensure_node_modules)`);
    process.exit(2);
  }
  const stack = loadStackEnv();
  const url = stack.KOSHA_GATEWAY_URL;
  const token = stack.KOSHA_AGENT_TOKEN;
  if (!url || !token) { console.error('stack.env lacks KOSHA_GATEWAY_URL or KOSHA_AGENT_TOKEN'); process.exit(2); }
  const baseline = loadBaseline(opts.baseline);
  const out = opts.out ?? mkdtempSync(path.join(tmpdir(), 'kosha-conformance-'));
  mkdirSync(out, { recursive: true });

  const unexpected = [];
  const warnings = [];
  let passed = 0;
  let failed = 0;
  let expected = 0;
  for (const revision of opts.revisions) {
    const started = Date.now();
    const { code, dir } = await runSuite(revision, url, token, out);
    const results = readResults(dir);
    const secs = ((Date.now() - started) / 1000).toFixed(1);
    if (results.length === 0) {
      unexpected.push(`${revision}: the suite ran no scenario (exit ${code}; log ${path.join(out, `${revision}.log`)})`);
      continue;
    }
    let revPassed = 0;
    let revFailed = 0;
    for (const { scenario, checks, crashed } of results) {
      // A scenario entry never covers wire-schema-valid: the gateway's messages must be valid
      // in every scenario, applicable or not (only an explicit SCENARIO:wire-schema-valid does).
      const listed = (check) => baseline.filter((b) => b.revision === revision && b.scenario === scenario
        && (b.check === check || (b.check === undefined && check !== WIRE_CHECK)));
      const failures = crashed
        ? [{ id: scenario, status: 'FAILURE', errorMessage: `scenario crashed (see ${revision}.log)` }]
        : checks.filter((c) => c.status === 'FAILURE');
      for (const c of checks) {
        if (c.status === 'SUCCESS') revPassed++;
        if (c.status === 'WARNING') warnings.push(`${revision} ${scenario}:${c.id}: ${c.errorMessage || c.details?.message || ''}`);
      }
      for (const c of failures) {
        revFailed++;
        const hits = listed(c.id);
        if (hits.length > 0) { hits.forEach((b) => { b.matched = true; }); expected++; continue; }
        unexpected.push(`${revision} ${scenario}:${c.id}: ${c.errorMessage ?? '(no message)'}`);
      }
    }
    passed += revPassed;
    failed += revFailed;
    console.log(`conformance ${revision}: ${results.length} scenarios, ${revPassed} checks passed, ` +
      `${revFailed} failed, in ${secs} s (suite exit ${code}; results in ${dir})`);
  }

  const stale = baseline.filter((b) => opts.revisions.includes(b.revision) && !b.matched);
  if (warnings.length) {
    console.log(`\nwarnings (SHOULD-level, not fatal):`);
    for (const w of warnings) console.log(`  ${w}`);
  }
  if (stale.length) {
    console.log(`\nbaseline entries that no longer fail (remove them from ${path.relative(ROOT, opts.baseline)}):`);
    for (const b of stale) console.log(`  STALE ${b.revision} ${b.text}  (${b.reason})`);
  }
  if (unexpected.length) {
    console.log(`\nchecks that failed and are not in the baseline:`);
    for (const u of unexpected) console.log(`  FAIL ${u}`);
  }
  const ok = unexpected.length === 0 && !(opts.strict && stale.length > 0);
  console.log(`\nconformance: ${passed} checks passed, ${failed} failed ` +
    `(${expected} expected by the baseline, ${unexpected.length} not), ` +
    `${stale.length} stale baseline entries: ${ok ? 'OK' : 'FAILED'}`);
  process.exit(ok ? 0 : 1);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((e) => { console.error(e); process.exit(2); });
}
