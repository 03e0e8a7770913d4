// A person logs in through the MCP Inspector's web UI (`@modelcontextprotocol/inspector` 2.12.0,
// pinned) in headless Chromium (issue 44, SPEC §5): Debian's `chromium`, driven by
// `playwright-core` with `executablePath` (nothing downloads a browser).
//
// The gateway is one more of the stack's (tests/ts/e2e/gateway.mjs) with the example policy
// docs/policies/confirm-disputes.cedar: the built-in set, plus a person's yes for disputes over
// 500.00 EUR (SPEC §5b); everything else answers as the stack's gateway does.
// The Inspector starts with a writable catalog holding only that gateway's URL (Streamable
// HTTP); no token is pasted anywhere. In its UI the test sets the client id `kosha-dev-mcp`
// (Server Settings → OAuth Settings) and connects: the gateway's 401 sends the Inspector to
// the protected-resource metadata and the local issuer's metadata, then the browser to the
// issuer's login page (authorization code + PKCE S256, the loopback redirect URI of the
// Inspector's origin, the scope the 401 named). The test picks the `agent` dev user; the
// issuer redirects back, the Inspector redeems the code and connects. It then lists the tools
// and calls `get_transaction`, and checks:
// - the tools the UI lists are the agent's tools (the SDK's tools/list with the stack's agent
//   token) and the result it shows is the gateway's (the SDK's call of the same tool);
// - the gateway logged that call with the public client and the person's `sub`.
// Then it raises a dispute of 600.00 EUR on a EUR transaction with no dispute:
// - in the Inspector's default Protocol Era (Legacy, 2025-11-25) nobody can be asked: the
//   tool error `confirmation_required`, no dispute;
// - with the era set to Modern (2026-07-28, Server Settings) and reconnected, the same call
//   brings up the Inspector's "Elicitation Request" form with the gateway's question (the
//   amount, the transaction and its account); the test ticks Confirm and submits, and the
//   result is the dispute (`created: true`), raised once, logged `input_required` then `ok`.
//
// Bounded: every wait has a timeout, the whole run is cut at KOSHA_BROWSER_TIMEOUT_S (default
// 120). On failure a screenshot, the page's HTML and console, and the Inspector's output go to
// <stack dev dir>/browser/ (under .dev/). Prints each step's time and the total.
//
//   KOSHA_STACK_ENV=.dev/test-stack/stack.env KOSHA_CHROMIUM=/usr/bin/chromium \
//     node tests/ts/browser/inspector-login.mjs
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

import { chromium } from 'playwright-core';

import { deployed, freePort, launchGateway } from '../e2e/gateway.mjs';
import { connect, loadStackEnv } from '../e2e/stack.mjs';

const PUBLIC_CLIENT = 'kosha-dev-mcp';
const USER = 'agent';
/** The `sub` of the issuer's `agent` dev user (crates/ops/src/issuer/authorize.rs). */
const USER_SUB = 'kosha-dev-user-agent';
/** A transaction of the seed data (core-api's migrate), as tests/ts/e2e uses. */
const TRANSACTION = 'txn_000003';
const SERVER = 'kosha';
const STEP_TIMEOUT_MS = 20_000;

const stack = loadStackEnv();
const chromiumPath = process.env.KOSHA_CHROMIUM ?? '/usr/bin/chromium';
const outDir = path.join(stack.KOSHA_DEV_DIR, 'browser');
const require = createRequire(import.meta.url);
const pkgPath = require.resolve('@modelcontextprotocol/inspector/package.json');
const pkg = JSON.parse(readFileSync(pkgPath, 'utf8'));
const BIN = path.join(path.dirname(pkgPath), pkg.bin['mcp-inspector']);

const t0 = performance.now();
const seconds = (from) => ((performance.now() - from) / 1000).toFixed(1);

/** Runs one named step, printing its time; failures carry the step's name. */
async function step(name, fn) {
  const from = performance.now();
  try {
    const value = await fn();
    console.log(`inspector-browser: ${name} (${seconds(from)} s)`);
    return value;
  } catch (err) {
    err.message = `${name}: ${err.message}`;
    throw err;
  }
}

/** Polls `check` (sync or async, truthy when done) every 100 ms for at most `ms`. */
async function until(what, ms, check) {
  const end = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * The Inspector's web UI on a free loopback port, with a writable catalog (only the gateway's
 * URL), an API token of its own, secrets in memory, and HOME in a scratch directory.
 * Returns `{url, origin, catalog, output, stop}`; `output()` is its stdout and stderr with the
 * API token masked.
 */
async function startInspector(scratch, gatewayUrl) {
  const port = await freePort();
  const token = randomBytes(16).toString('hex');
  const catalog = path.join(scratch, 'mcp.json');
  writeFileSync(catalog, JSON.stringify({
    mcpServers: { [SERVER]: { type: 'streamable-http', url: gatewayUrl } }
  }));
  const env = {
    ...process.env,
    HOME: scratch,
    MCP_STORAGE_DIR: path.join(scratch, 'storage'),
    MCP_INSPECTOR_SECRET_STORE: 'memory',
    MCP_INSPECTOR_API_TOKEN: token,
    CLIENT_PORT: String(port),
    MCP_SANDBOX_PORT: '0',
    MCP_APP_ORIGIN_PORT: '0',
    MCP_AUTO_OPEN_ENABLED: 'false',
    NO_COLOR: '1'
  };
  const child = spawn(process.execPath, [BIN, '--web', '--catalog', catalog], {
    env, stdio: ['ignore', 'pipe', 'pipe']
  });
  let output = '';
  child.stdout.on('data', (d) => { output += d; });
  child.stderr.on('data', (d) => { output += d; });
  let exited = null;
  child.once('exit', (code, signal) => { exited = signal ?? code; });
  // Never outlives this process, however it ends (the overall time limit included).
  process.once('exit', () => { if (exited === null) child.kill('SIGKILL'); });
  const origin = `http://127.0.0.1:${port}`;
  await until('the Inspector web server', 30_000, async () => {
    if (exited !== null) throw new Error(`the Inspector exited (${exited}): ${output.slice(-2000)}`);
    try {
      return (await fetch(origin, { signal: AbortSignal.timeout(1000) })).ok;
    } catch {
      return false;
    }
  });
  return {
    url: `${origin}/?MCP_INSPECTOR_API_TOKEN=${token}`,
    origin,
    catalog,
    output: () => output.replaceAll(token, '<api token>'),
    stop: () => new Promise((resolve) => {
      if (exited !== null) return resolve();
      child.once('exit', resolve);
      child.kill('SIGTERM');
      setTimeout(() => { child.kill('SIGKILL'); resolve(); }, 5000).unref();
    })
  };
}

/** Whether `url` is on this machine (the browser may reach nothing else: no web fonts). */
function isLoopback(url) {
  return ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
}

/** The tool `name` in the UI's list: a button holding its title and, exactly, its name. */
function toolButton(page, name) {
  return page.getByRole('button').filter({ has: page.getByText(name, { exact: true }) });
}

/** The gateway's log lines from byte `offset` on, parsed (tool calls carry the principal). */
function gatewayLogFrom(file, offset) {
  return readFileSync(file).subarray(offset).toString('utf8').split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => { try { return JSON.parse(l); } catch { return {}; } });
}

/** The result the UI shows: the first code editor after "Structured Output" (Ace: its whole
 * value, not only the rows drawn). */
async function structuredOutput(page) {
  const shown = await page.evaluate(() => {
    const label = [...document.querySelectorAll('*')]
      .find((e) => e.childElementCount === 0 && e.textContent === 'Structured Output');
    const editor = [...document.querySelectorAll('.ace_editor')]
      .find((e) => label.compareDocumentPosition(e) & Node.DOCUMENT_POSITION_FOLLOWING);
    return editor && window.ace.edit(editor).getValue();
  });
  assert.ok(shown, 'no editor after "Structured Output"');
  return shown;
}

/** Opens raise_dispute in the Tools view and executes it for 600.00 EUR of `transactionId`. */
async function raiseDispute(page, transactionId) {
  await toolButton(page, 'raise_dispute').click();
  await page.getByRole('textbox', { name: 'transaction_id' }).fill(transactionId);
  await page.getByRole('textbox', { name: 'reason' }).fill('charged twice');
  await page.getByRole('textbox', { name: 'amount_minor' }).fill('60000');
  await page.getByRole('button', { name: 'Execute Tool' }).click();
}

/** A seeded EUR transaction over 600.00 EUR with no dispute: `{transaction_id, account_id}`. */
function undisputedOver600Eur() {
  const row = execFileSync('psql', [stack.DATABASE_URL, '-tAc',
    "SELECT t.transaction_id || ' ' || t.account_id FROM core.transactions t WHERE t.currency = 'EUR'" +
    ' AND t.amount_minor > 60000 AND NOT EXISTS (SELECT 1 FROM core.disputes d' +
    ' WHERE d.transaction_id = t.transaction_id) ORDER BY t.transaction_id LIMIT 1'], { encoding: 'utf8' }).trim();
  assert.ok(row, 'an undisputed EUR transaction over 600.00');
  const [transaction_id, account_id] = row.split(' ');
  return { transaction_id, account_id };
}

/** Disputes of `transactionId` in the stack's database. */
function disputesOf(transactionId) {
  return Number(execFileSync('psql', [stack.DATABASE_URL, '-tAc',
    `SELECT count(*) FROM core.disputes WHERE transaction_id = '${transactionId}'`], { encoding: 'utf8' }).trim());
}

async function run(page, inspector, gateway) {
  const issuer = new URL(stack.KOSHA_JWT_ISSUER);
  // What the gateway answers the stack's machine agent token: the UI must show the same.
  const expected = await step('read the expected tools and result through the SDK', async () => {
    const client = await connect(stack);
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name).sort();
      const result = await client.callTool({ name: 'get_transaction', arguments: { transaction_id: TRANSACTION } });
      assert.notEqual(result.isError, true, JSON.stringify(result));
      return { tools, structured: result.structuredContent };
    } finally {
      await client.close();
    }
  });

  const toggle = page.getByRole('switch', { name: `Connect or disconnect "${SERVER}"` });
  await step('open the Inspector', async () => {
    await page.goto(inspector.url);
    await toggle.waitFor();
    assert.equal(await toggle.isChecked(), false);
  });

  await step(`set the client id ${PUBLIC_CLIENT} in Server Settings → OAuth Settings`, async () => {
    await page.getByRole('button', { name: 'Settings', exact: true }).click();
    const dialog = page.getByRole('dialog').filter({ hasText: 'Server Settings' });
    await dialog.getByRole('button', { name: 'OAuth Settings' }).click();
    await dialog.getByRole('textbox', { name: 'Client ID', exact: true }).fill(PUBLIC_CLIENT);
    // The redirect URI the Inspector will send: its own origin's callback, on loopback.
    assert.equal(await dialog.getByRole('textbox', { name: 'Redirect URI' }).inputValue(),
      `${inspector.origin}/oauth/callback`);
    await dialog.getByRole('button', { name: 'Close' }).first().click();
    await dialog.waitFor({ state: 'hidden' });
    // Saved to the catalog: the client id and nothing else (no header, no token).
    const saved = await until('the catalog to hold the client id', 5000, () => {
      const server = JSON.parse(readFileSync(inspector.catalog, 'utf8')).mcpServers[SERVER];
      return server.oauth?.clientId === PUBLIC_CLIENT && server;
    });
    assert.deepEqual(saved.oauth, { clientId: PUBLIC_CLIENT });
    assert.equal(saved.headers, undefined);
  });

  await step("connect: the Inspector sends the browser to the issuer's login page", async () => {
    // A Mantine switch: its track covers the input, so the click is forced onto it.
    await toggle.check({ force: true });
    await page.waitForURL((u) => u.origin === issuer.origin && u.pathname === '/oauth2/authorize');
    const query = new URL(page.url()).searchParams;
    assert.equal(query.get('client_id'), PUBLIC_CLIENT);
    assert.equal(query.get('response_type'), 'code');
    assert.equal(query.get('code_challenge_method'), 'S256');
    assert.ok(query.get('code_challenge'));
    assert.ok(query.get('state'));
    assert.equal(query.get('redirect_uri'), `${inspector.origin}/oauth/callback`);
    // The scope the gateway's 401 named (SPEC §5), and the gateway as the resource (RFC 8707).
    assert.equal(query.get('scope'), 'kosha/agent');
    assert.equal(query.get('resource'), gateway.url);
    await page.getByRole('heading', { name: 'Kosha dev login' }).waitFor();
  });

  await step(`pick the dev user ${USER}; back in the Inspector, connected`, async () => {
    await page.getByRole('button', { name: USER, exact: true }).click();
    await page.waitForURL((u) => u.origin === inspector.origin);
    await page.getByText('Connected', { exact: true }).waitFor();
    assert.equal(await toggle.isChecked(), true);
  });

  await step('list the tools', async () => {
    // The Servers | Tools segmented control: its label takes the click.
    await page.locator('label').filter({ hasText: /^Tools$/ }).click();
    await page.getByText(`Tools (${expected.tools.length})`, { exact: true }).waitFor();
    for (const name of expected.tools) await toolButton(page, name).waitFor();
  });

  const logOffset = statSync(gateway.log).size;
  await step(`call get_transaction ${TRANSACTION}; the result appears`, async () => {
    await toolButton(page, 'get_transaction').click();
    await page.getByRole('textbox', { name: 'transaction_id' }).fill(TRANSACTION);
    await page.getByRole('button', { name: 'Execute Tool' }).click();
    await page.getByText('Structured Output', { exact: true }).waitFor();
    const shown = await structuredOutput(page);
    assert.deepEqual(JSON.parse(shown), expected.structured);
    assert.equal(JSON.parse(shown).transaction.transaction_id, TRANSACTION);
  });

  await step(`the gateway logged the call as ${PUBLIC_CLIENT}, user ${USER_SUB}`, async () => {
    const call = await until('the tool call in the gateway log', 5000, () =>
      gatewayLogFrom(gateway.log, logOffset).find((l) => l.message === 'tool call' && l.tool === 'get_transaction'));
    assert.equal(call.outcome, 'ok', JSON.stringify(call));
    assert.equal(call.span?.principal, PUBLIC_CLIENT, JSON.stringify(call));
    assert.equal(call.span?.user, USER_SUB, JSON.stringify(call));
  });

  // The confirmation example (SPEC §5b): a dispute over 500.00 EUR asks its person.
  const disputed = undisputedOver600Eur();
  await step(`raise_dispute on ${disputed.transaction_id} for 600.00 EUR at 2025-11-25 (the Inspector's default era): confirmation_required`, async () => {
    await raiseDispute(page, disputed.transaction_id);
    await page.getByText('Tool Error', { exact: true }).waitFor();
    await page.getByText(/"confirmation_required"/).first().waitFor();
    assert.equal(disputesOf(disputed.transaction_id), 0);
  });

  await step('set the Protocol Era to Modern (2026-07-28) in Server Settings; reconnect', async () => {
    await page.locator('label').filter({ hasText: /^Servers$/ }).click();
    await page.getByRole('button', { name: 'Settings', exact: true }).click();
    const dialog = page.getByRole('dialog').filter({ hasText: 'Server Settings' });
    await dialog.getByRole('textbox', { name: 'Protocol Era' }).click();
    await page.getByRole('option', { name: /^Modern/ }).click();
    await dialog.getByRole('button', { name: 'Close' }).first().click();
    await dialog.waitFor({ state: 'hidden' });
    await toggle.click({ force: true });
    await until('the Inspector to disconnect', STEP_TIMEOUT_MS, async () => !(await toggle.isChecked()));
    await toggle.click({ force: true });
    await page.getByText('Connected', { exact: true }).waitFor();
    await page.getByText('MCP 2026-07-28', { exact: true }).waitFor();
  });

  const logOffset2 = statSync(gateway.log).size;
  await step('the same call at 2026-07-28: the question appears with the amount and the transaction', async () => {
    await page.locator('label').filter({ hasText: /^Tools$/ }).click();
    await raiseDispute(page, disputed.transaction_id);
    const dialog = page.getByRole('dialog').filter({ hasText: 'Elicitation Request' });
    await dialog.waitFor();
    const text = await dialog.innerText();
    assert.ok(text.includes('600.00 EUR'), text);
    assert.ok(text.includes(disputed.transaction_id), text);
    assert.ok(text.includes(disputed.account_id), text);
    assert.equal(disputesOf(disputed.transaction_id), 0);
  });

  await step('confirm it: the dispute is raised once, and the result appears', async () => {
    const dialog = page.getByRole('dialog').filter({ hasText: 'Elicitation Request' });
    await dialog.getByRole('checkbox', { name: 'Confirm' }).check();
    await dialog.getByRole('textbox', { name: 'Note' }).fill('yes, I asked for it');
    await dialog.getByRole('button', { name: 'Submit' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await page.getByText('Structured Output', { exact: true }).waitFor();
    const shown = JSON.parse(await structuredOutput(page));
    assert.equal(shown.created, true, JSON.stringify(shown));
    assert.equal(shown.status, 'open', JSON.stringify(shown));
    assert.equal(disputesOf(disputed.transaction_id), 1);
    const lines = gatewayLogFrom(gateway.log, logOffset2).filter((l) => l.message === 'tool call' && l.tool === 'raise_dispute');
    assert.deepEqual(lines.map((l) => l.outcome), ['input_required', 'ok'], JSON.stringify(lines));
  });
}

async function main() {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'kosha-inspector-web-'));
  rmSync(outDir, { recursive: true, force: true });
  let gateway;
  let inspector;
  let browser;
  let page;
  const consoleLines = [];
  try {
    gateway = await step('start a gateway with the example policy confirm-disputes.cedar', () =>
      launchGateway(stack, 'inspector', deployed('confirm-disputes.cedar')));
    inspector = await step(`start the Inspector ${pkg.version} web UI`, () => startInspector(scratch, gateway.url));
    assert.match(pkg.version, /^2\.12\./);
    browser = await step(`launch ${chromiumPath} (headless)`, () =>
      chromium.launch({ executablePath: chromiumPath, headless: true, timeout: 30_000 }));
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    // Nothing leaves the machine (the UI asks for web fonts; they are not needed).
    await context.route((url) => !isLoopback(url), (route) => route.abort());
    page = await context.newPage();
    page.setDefaultTimeout(STEP_TIMEOUT_MS);
    page.setDefaultNavigationTimeout(STEP_TIMEOUT_MS);
    page.on('console', (m) => consoleLines.push(`${m.type()}: ${m.text()}`));
    page.on('pageerror', (e) => consoleLines.push(`pageerror: ${e.message}`));
    await run(page, inspector, gateway);
    console.log(`inspector-browser: passed in ${seconds(t0)} s`);
  } catch (err) {
    mkdirSync(outDir, { recursive: true });
    if (page) {
      await page.screenshot({ path: path.join(outDir, 'failure.png'), fullPage: true }).catch(() => {});
      writeFileSync(path.join(outDir, 'page.html'), await page.content().catch(() => ''));
      writeFileSync(path.join(outDir, 'page-url.txt'), `${page.url().replace(/MCP_INSPECTOR_API_TOKEN=[^&]*/, 'MCP_INSPECTOR_API_TOKEN=<api token>')}\n`);
    }
    writeFileSync(path.join(outDir, 'console.log'), consoleLines.join('\n') + '\n');
    if (inspector) writeFileSync(path.join(outDir, 'inspector.log'), inspector.output());
    console.error(`inspector-browser: FAILED after ${seconds(t0)} s: ${err.stack ?? err}`);
    console.error(`inspector-browser: screenshot, page, console and Inspector output in ${path.relative(process.cwd(), outDir)}/`);
    process.exitCode = 1;
  } finally {
    await browser?.close().catch(() => {});
    await inspector?.stop();
    await gateway?.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

const limit = Number(process.env.KOSHA_BROWSER_TIMEOUT_S ?? 120) * 1000;
const timer = setTimeout(() => {
  console.error(`inspector-browser: FAILED: over ${limit / 1000} s`);
  process.exit(1);
}, limit);
timer.unref();
await main();
