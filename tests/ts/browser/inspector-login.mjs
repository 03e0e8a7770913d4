// A person logs in through the MCP Inspector's web UI (`@modelcontextprotocol/inspector` 2.12.0,
// pinned) in headless Chromium (issue 44, SPEC §5): Debian's `chromium`, driven by
// `playwright-core` with `executablePath` (nothing downloads a browser).
//
// The Inspector starts with a writable catalog holding only the gateway's URL (Streamable
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
//
// Bounded: every wait has a timeout, the whole run is cut at KOSHA_BROWSER_TIMEOUT_S (default
// 120). On failure a screenshot, the page's HTML and console, and the Inspector's output go to
// <stack dev dir>/browser/ (under .dev/). Prints each step's time and the total.
//
//   KOSHA_STACK_ENV=.dev/test-stack/stack.env KOSHA_CHROMIUM=/usr/bin/chromium \
//     node tests/ts/browser/inspector-login.mjs
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

import { chromium } from 'playwright-core';

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

/** A free TCP port on loopback (the Inspector's web server needs a fixed one). */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
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
async function startInspector(scratch) {
  const port = await freePort();
  const token = randomBytes(16).toString('hex');
  const catalog = path.join(scratch, 'mcp.json');
  writeFileSync(catalog, JSON.stringify({
    mcpServers: { [SERVER]: { type: 'streamable-http', url: stack.KOSHA_GATEWAY_URL } }
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
function gatewayLogFrom(offset) {
  const file = path.join(stack.KOSHA_DEV_DIR, 'logs', 'mcp-gateway.log');
  return readFileSync(file).subarray(offset).toString('utf8').split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => { try { return JSON.parse(l); } catch { return {}; } });
}

async function run(page, inspector) {
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
    assert.equal(query.get('resource'), stack.KOSHA_GATEWAY_URL);
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

  const logOffset = statSync(path.join(stack.KOSHA_DEV_DIR, 'logs', 'mcp-gateway.log')).size;
  await step(`call get_transaction ${TRANSACTION}; the result appears`, async () => {
    await toolButton(page, 'get_transaction').click();
    await page.getByRole('textbox', { name: 'transaction_id' }).fill(TRANSACTION);
    await page.getByRole('button', { name: 'Execute Tool' }).click();
    await page.getByText('Structured Output', { exact: true }).waitFor();
    // The first code editor after "Structured Output" holds the result (Ace: its whole value,
    // not only the rows drawn).
    const shown = await page.evaluate(() => {
      const label = [...document.querySelectorAll('*')]
        .find((e) => e.childElementCount === 0 && e.textContent === 'Structured Output');
      const editor = [...document.querySelectorAll('.ace_editor')]
        .find((e) => label.compareDocumentPosition(e) & Node.DOCUMENT_POSITION_FOLLOWING);
      return editor && window.ace.edit(editor).getValue();
    });
    assert.ok(shown, 'no editor after "Structured Output"');
    assert.deepEqual(JSON.parse(shown), expected.structured);
    assert.equal(JSON.parse(shown).transaction.transaction_id, TRANSACTION);
  });

  await step(`the gateway logged the call as ${PUBLIC_CLIENT}, user ${USER_SUB}`, async () => {
    const call = await until('the tool call in the gateway log', 5000, () =>
      gatewayLogFrom(logOffset).find((l) => l.message === 'tool call' && l.tool === 'get_transaction'));
    assert.equal(call.outcome, 'ok', JSON.stringify(call));
    assert.equal(call.span?.principal, PUBLIC_CLIENT, JSON.stringify(call));
    assert.equal(call.span?.user, USER_SUB, JSON.stringify(call));
  });
}

async function main() {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'kosha-inspector-web-'));
  rmSync(outDir, { recursive: true, force: true });
  let inspector;
  let browser;
  let page;
  const consoleLines = [];
  try {
    inspector = await step(`start the Inspector ${pkg.version} web UI`, () => startInspector(scratch));
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
    await run(page, inspector);
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
