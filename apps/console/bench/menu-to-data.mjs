#!/usr/bin/env node
// Menu click to data, per page, in Chromium: how long a person waits between clicking a page in the
// navigation and seeing that page's data, on the first visit in a session (the page's code not yet
// loaded: a new browser context per measurement, so an empty cache) and on a second visit (its code
// and data already there). It starts the built server (apps/server/dist/server.js, serving
// apps/console/dist) on a temporary data folder and a free port, seeds a few calls, a school, a
// template, a book and their deliveries through the API, logs in once in Chromium as the admin
// the server made at start, then for each round and each menu page: opens another page, clicks
// the page's link and times, in the page, from the click's pointerdown to the first DOM change
// after which the page's heading is there, no "Loading…" is left in it and its own data (a row of
// its table, its form) is shown. Round 0 is a warm-up (the server's and Chromium's caches, V8's
// compiler) and is not counted; medians and p90s (nearest rank) over the rest, so that a busy
// moment of a shared 2-core machine moves one sample, not the figure. Beside them, in the first
// visit's table, when the page's first API request started and when the last of its code arrived,
// after the click (medians): what the click waits on. With BENCH_BASELINE, another build is
// measured in turns with this one, on a server of its own seeded alike, and each median gets its
// ratio to the baseline's: the load of a shared machine falls on both alike. Builds nothing:
// `pnpm build` first.
//   node bench/menu-to-data.mjs                       (from apps/console; `pnpm bench` runs it)
//   BENCH_ROUNDS=11 BENCH_PAGES=History,Audit node bench/menu-to-data.mjs
//   BENCH_SERVER=/tmp/base/apps/server/dist/server.js node bench/menu-to-data.mjs  (another build)
//   BENCH_BASELINE=/tmp/base/apps/server/dist/server.js node bench/menu-to-data.mjs  (A/B)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startProcess, stopProcess } from '../../server/bench/server-process.mjs';

/** The target for the median of a first visit, on this machine. */
const TARGET_MS = 250;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const here = path.dirname(fileURLToPath(import.meta.url));
const serverScript = process.env.BENCH_SERVER ?? path.join(here, '../../server/dist/server.js');
/** Another build's dist/server.js (serving its own console build), measured in turns with this one. */
const baselineScript = process.env.BENCH_BASELINE;
const consoleDir = path.join(here, '..', 'dist');
const ADMIN = { username: 'bench-admin', password: 'bench-admin-password-2026' };

/**
 * The menu's pages, in its order: the link's name, the heading the page shows, and what shows its
 * data (with the seeded data, every list has a row). The Dashboard is reached from the Service
 * page, every other page from the Dashboard, where staff land after logging in.
 */
const PAGES = [
  { link: 'Dashboard', path: '/dashboard', ready: '.dashboard-totals', from: 'Service' },
  { link: 'Send', path: '/send', ready: '.operation-panel form' },
  { link: 'History', path: '/history', ready: '.history-page table tbody tr' },
  { link: 'Deliveries', path: '/deliveries', ready: '.deliveries-page table tbody tr' },
  { link: 'Books', path: '/books', ready: '.books-page table tbody tr' },
  { link: 'Schools', path: '/schools', ready: '.schools-page table tbody tr' },
  { link: 'Templates', path: '/templates', ready: '.templates-page table tbody tr' },
  { link: 'Users', path: '/users', ready: '.users-page table tbody tr' },
  { link: 'Audit', path: '/audit', ready: '.audit-page table tbody tr' },
  { link: 'Service', path: '/service', ready: '.service-page dl, .service-page table' },
];
const byLink = new Map(PAGES.map((p) => [p.link, p]));
const only = process.env.BENCH_PAGES?.split(',').map((s) => s.trim());
const measured = only ? PAGES.filter((p) => only.includes(p.link)) : PAGES;

if (!fs.existsSync(serverScript) || !fs.existsSync(path.join(consoleDir, 'index.html'))) {
  console.error(`No build at ${serverScript} and ${consoleDir}: run \`pnpm build\` at the root first.`);
  process.exit(2);
}
if (!fs.existsSync(CHROMIUM)) {
  console.log(
    `menu-to-data: no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH); skipped.`,
  );
  process.exit(0);
}

/** The built server on a fresh data folder, its first admin made at start, limits off for the seeding. */
function startServer(script, dataDir) {
  // A developer's shell may set where the console is, the database or the addresses: the defaults
  // here (SQLite in the data folder, this build's console).
  const { CONSOLE_DIR, DATABASE_URL, PUBLIC_BASE_URL, ALLOWED_HOSTS, TRUST_PROXY, ...baseEnv } = process.env;
  return startProcess(
    script,
    {
      DATA_DIR: dataDir,
      ADMIN_USERNAME: ADMIN.username,
      ADMIN_PASSWORD: ADMIN.password,
      AUTHCODE_LIMIT_PER_PHONE: 'off',
      AUTHCODE_LIMIT_PER_IP: 'off',
      AUTHCODE_LIMIT_PER_RANGE: 'off',
      ASMX_LIMIT_PER_IP: 'off',
    },
    // The server reads a .env in its working directory: the data folder has none.
    { baseEnv, cwd: dataDir },
  );
}

/** Data on every page: calls (with their deliveries), a school, a template, a book, an operator. */
async function seed(url) {
  const headers = { origin: url, 'x-requested-with': 'school-console' };
  const login = await fetch(`${url}/api/session`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify(ADMIN),
  });
  if (login.status !== 200) throw new Error(`login: ${login.status} ${await login.text()}`);
  const cookie = login.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const api = async (method, apiPath, body, type = 'application/json') => {
    const res = await fetch(`${url}/api${apiPath}`, {
      method,
      headers: { ...headers, cookie, 'content-type': type },
      body: type === 'application/json' ? JSON.stringify(body) : body,
    });
    if (!res.ok) throw new Error(`${method} ${apiPath}: ${res.status} ${await res.text()}`);
  };
  const school = 'https://school.example.org/';
  await api('POST', '/schools', { name: 'Bench School', baseUrl: school, topicKey: 'bench' });
  await api('POST', '/templates', { type: 'homework', title: 'Homework {id}', body: 'New homework: {id}.' });
  await api('PUT', '/books/2026-1/7B?filename=bench.pdf', '%PDF-1.4\n%%EOF\n', 'application/pdf');
  await api('POST', '/users', {
    username: 'bench-operator',
    displayName: 'Bench Operator',
    password: 'bench-operator-password-2026',
    role: 'operator',
  });
  const asmx = async (pathAndQuery) => {
    const res = await fetch(`${url}${pathAndQuery}`);
    if (!res.ok) throw new Error(`GET ${pathAndQuery}: ${res.status} ${await res.text()}`);
  };
  for (let i = 0; i < 20; i++) {
    await asmx(
      `/AuthCodeSending.asmx/AuthCode?code=${4800 + i}&phone=%2B4479111234${String(i).padStart(2, '0')}`,
    );
    if (i % 4 === 0) {
      await asmx(
        `/NotificationNotes.asmx/SendNotificationType?${new URLSearchParams({ id: String(i), baseUrlSchool: school, TypeNotfication: 'homework' })}`,
      );
    }
  }
  await asmx('/BookPdf.asmx/GetBookPdfByTerm?termId=2026-1&srid=S-1&classId=7B');
}

/** Waits until `target` shows its data (heading, nothing loading, its own data). */
function shown(page, target) {
  return page.waitForFunction(
    ({ heading, ready }) =>
      document.querySelector('main h1')?.textContent === heading &&
      !document.querySelector('main .status-loading') &&
      document.querySelector(ready) !== null,
    { heading: target.link, ready: target.ready },
    { timeout: 15_000 },
  );
}

/**
 * Clicks `target`'s menu link and times, in the page, from the click's pointerdown to the DOM
 * change that shows its data; with the first API request's start and the last script's or
 * stylesheet's arrival (responseEnd), after the click, from the Resource Timing entries.
 */
async function clickAndTime(page, target) {
  await page.evaluate(
    ({ heading, ready }) => {
      const state = { start: undefined, end: undefined };
      window.__menuBench = state;
      const done = () =>
        document.querySelector('main h1')?.textContent === heading &&
        !document.querySelector('main .status-loading') &&
        document.querySelector(ready) !== null;
      document.addEventListener(
        'pointerdown',
        (event) => {
          state.start = event.timeStamp;
        },
        { capture: true, once: true },
      );
      const observer = new MutationObserver(() => {
        if (state.start === undefined || !done()) return;
        state.end = performance.now();
        observer.disconnect();
      });
      observer.observe(document.body, { childList: true, subtree: true, characterData: true });
    },
    { heading: target.link, ready: target.ready },
  );
  await page
    .getByRole('navigation', { name: 'Main' })
    .getByRole('link', { name: target.link, exact: true })
    .click();
  await page.waitForFunction(() => window.__menuBench.end !== undefined, null, { timeout: 15_000 });
  return page.evaluate(() => {
    const { start, end } = window.__menuBench;
    const after = performance.getEntriesByType('resource').filter((e) => e.startTime >= start);
    const api = after.filter((e) => new URL(e.name).pathname.startsWith('/api/'));
    const code = after.filter((e) => /\.(js|css)$/.test(new URL(e.name).pathname));
    return {
      ms: end - start,
      request: api.length ? Math.min(...api.map((e) => e.startTime)) - start : undefined,
      code: code.length ? Math.max(...code.map((e) => e.responseEnd)) - start : undefined,
    };
  });
}

/** One first visit and one second visit of `target`, in a new context (an empty cache). */
async function visit(browser, url, storageState, target) {
  const from = byLink.get(target.from ?? 'Dashboard');
  const context = await browser.newContext({
    baseURL: url,
    storageState,
    viewport: { width: 1280, height: 900 },
    locale: 'en-GB',
    timezoneId: 'UTC',
  });
  try {
    const page = await context.newPage();
    await page.goto(from.path);
    await shown(page, from);
    // Nothing of the first page still loading when the click comes.
    await page.waitForLoadState('networkidle');
    const first = await clickAndTime(page, target);
    await clickAndTime(page, from);
    const second = await clickAndTime(page, target);
    return { first, second };
  } finally {
    await context.close();
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};
const p90 = (xs) => [...xs].sort((a, b) => a - b)[Math.ceil(0.9 * xs.length) - 1];
const ms = (n) => (n === undefined ? '—' : `${Math.round(n)} ms`);

/** One table; with a baseline, its median beside each page's and the ratio. Returns the overall median. */
function report(title, samples, baseline, extra) {
  console.log(`\n${title}`);
  let header = `  ${'page'.padEnd(12)}${'median'.padStart(9)}${'p90'.padStart(9)}`;
  if (extra) header += `${'request'.padStart(10)}${'code'.padStart(9)}`;
  if (baseline) header += `${'baseline'.padStart(10)}${'ratio'.padStart(7)}`;
  console.log(header);
  const all = [];
  const allBase = [];
  const defined = (xs) => xs.filter((x) => x !== undefined);
  for (const target of measured) {
    const rows = samples.get(target.link);
    const times = rows.map((r) => r.ms);
    all.push(...times);
    let line = `  ${target.link.padEnd(12)}${ms(median(times)).padStart(9)}${ms(p90(times)).padStart(9)}`;
    if (extra) {
      const requests = defined(rows.map((r) => r.request));
      const code = defined(rows.map((r) => r.code));
      line += `${ms(requests.length ? median(requests) : undefined).padStart(10)}${ms(code.length ? median(code) : undefined).padStart(9)}`;
    }
    if (baseline) {
      const base = baseline.get(target.link).map((r) => r.ms);
      allBase.push(...base);
      line += `${ms(median(base)).padStart(10)}${(median(times) / median(base)).toFixed(2).padStart(7)}`;
    }
    console.log(line);
  }
  return { median: median(all), baseline: baseline ? median(allBase) : undefined };
}

/** A server of `script` with its data seeded and the admin's session (cookies) in Chromium. */
async function prepare(browser, script) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-menu-bench-'));
  const server = { dataDir, ...(await startServer(script, dataDir)) };
  servers.push(server);
  await seed(server.url);
  const context = await browser.newContext({ baseURL: server.url });
  const page = await context.newPage();
  await page.goto('/login');
  await page.getByLabel('Username', { exact: true }).fill(ADMIN.username);
  await page.getByLabel('Password', { exact: true }).fill(ADMIN.password);
  await page.getByRole('button', { name: 'Log in', exact: true }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
  server.storageState = await context.storageState();
  await context.close();
  return server;
}

const servers = [];
let browser;
try {
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // The e2e suite's flags (e2e/tests/browser.ts): no background networking to disturb the timing.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
    ],
  });
  const ours = await prepare(browser, serverScript);
  const base = baselineScript ? await prepare(browser, baselineScript) : undefined;
  const samples = () => new Map(measured.map((p) => [p.link, []]));
  const first = samples();
  const second = samples();
  const baseFirst = base && samples();
  const baseSecond = base && samples();
  for (let round = 0; round <= ROUNDS; round++) {
    for (const target of measured) {
      // With a baseline the two builds take turns, each going first every other round.
      const order = !base ? [ours] : round % 2 ? [base, ours] : [ours, base];
      for (const server of order) {
        const times = await visit(browser, server.url, server.storageState, target);
        if (round === 0) continue;
        (server === ours ? first : baseFirst).get(target.link).push(times.first);
        (server === ours ? second : baseSecond).get(target.link).push(times.second);
      }
    }
  }

  console.log(
    `Menu click to data in Chromium, ${ROUNDS} rounds after a warm-up (${os.cpus().length} CPUs)` +
      (base ? `; baseline ${baselineScript}, rounds alternating` : ''),
  );
  const firstVisit = report(
    'First visit in a session (the page’s code not loaded yet); request: its first API request started, code: its code arrived, after the click',
    first,
    baseFirst,
    true,
  );
  const secondVisit = report('Second visit (code and data loaded)', second, baseSecond, false);
  const against = (figures) =>
    figures.baseline === undefined
      ? ''
      : `; baseline ${ms(figures.baseline)}, ratio ${(figures.median / figures.baseline).toFixed(2)}`;
  console.log(
    `\nFirst visit, all pages: median ${ms(firstVisit.median)}; target ${TARGET_MS} ms; ratio ${(firstVisit.median / TARGET_MS).toFixed(2)}${against(firstVisit)}`,
  );
  console.log(`Second visit, all pages: median ${ms(secondVisit.median)}${against(secondVisit)}`);
} finally {
  await browser?.close();
  for (const server of servers) {
    await stopProcess(server.child);
    fs.rmSync(server.dataDir, { recursive: true, force: true });
  }
}
