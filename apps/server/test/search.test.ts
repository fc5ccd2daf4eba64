import type { CallDetail, CallList, Problem } from '@school/contract';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallQuery } from '../src/history/index.js';
import type { NewCall } from '../src/store/index.js';
import { CALL_T0, callRow, startTestApp, type TestApp } from './helpers.js';

const MINUTE = 60_000;
const T0 = CALL_T0;

const call = callRow;

/** Records all the calls in one group commit. */
async function seed(t: TestApp, calls: NewCall[]): Promise<void> {
  await Promise.all(calls.map((c) => t.app.recorder.record(c)));
}

const list = async (t: TestApp, query: string) => {
  const res = await t.inject({ method: 'GET', url: `/api/calls?${query}` });
  return { status: res.statusCode, body: res.json() as CallList & Problem, headers: res.headers };
};

/** Resolves once the search worker has `n` jobs under way. */
async function workerBusy(t: TestApp, n = 1): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (t.app.history.searchWorker.jobs < n) {
    if (Date.now() > deadline) throw new Error(`the worker never had ${n} jobs`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

// A search that is slow by nature, not by a hook: SQLite's LIKE compares a 200-character pattern
// at every position of 60 KB of `a`s (tens of milliseconds per row).
const SLOW_Q = `${'a'.repeat(199)}b`;
const slowCalls = (n: number) =>
  Array.from({ length: n }, (_, i) =>
    call({ at: T0 + i * MINUTE, request: 'a'.repeat(60_000), response: 'a'.repeat(60_000) }),
  );

describe('free-text search in the worker', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
    const texts = [
      'needle in the body',
      'NEEDLE upper case',
      'a 100% match',
      'under_score',
      'back\\slash',
      'nothing here',
    ];
    await seed(
      t,
      Array.from({ length: 240 }, (_, i) =>
        call({
          // Pairs of calls at the same millisecond: the (at, id) order decides between them.
          at: T0 + Math.floor(i / 2) * MINUTE,
          operation: i % 3 === 0 ? 'SendMarkNotes' : 'AuthCode',
          binding: i % 2 === 0 ? 'soap11' : 'http-get',
          outcome: i % 5 === 0 ? 'client-error' : 'ok',
          caller_ip: i % 4 === 0 ? '198.51.100.7' : '203.0.113.1',
          params: i % 7 === 0 ? null : JSON.stringify({ id: String(i), note: texts[i % texts.length] }),
          request: `POST /x HTTP/1.1\r\n\r\n<body>${texts[(i + 1) % texts.length]} ${i}</body>`,
          response: `HTTP/1.1 200\r\n\r\n<r>${texts[(i + 2) % texts.length]}</r>`,
          // The error and the note: searched too, with texts the others hold and one they do not.
          error: i % 11 === 0 ? `Refused: ${texts[(i + 3) % texts.length]} (only-in-error ${i})` : null,
          note: i % 13 === 0 ? `Queued: ${texts[(i + 4) % texts.length]} (only-in-note ${i})` : null,
        }),
      ),
    );
  });
  afterAll(() => t.close());

  /** What the history search answered before the worker: one LIKE on the main connection. */
  async function before(query: CallQuery & { q: string }, limit: number) {
    const pattern = `%${query.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    let qb = t.app.store.db.selectFrom('calls').select(['id', 'at']);
    if (query.operation) qb = qb.where('operation', '=', query.operation);
    if (query.binding) qb = qb.where('binding', '=', query.binding);
    if (query.ip) qb = qb.where('caller_ip', '=', query.ip);
    if (query.from !== undefined) qb = qb.where('at', '>=', query.from);
    if (query.to !== undefined) qb = qb.where('at', '<', query.to);
    qb = qb.where((eb) =>
      eb.or(
        (['params', 'request', 'response', 'error', 'note'] as const).map(
          (c) => sql<boolean>`${sql.ref(c)} like ${pattern} escape '\\'`,
        ),
      ),
    );
    const rows = await qb.orderBy('at', 'desc').orderBy('id', 'desc').limit(limit).execute();
    return rows.map((r) => r.id);
  }

  it('finds exactly the calls the LIKE on the main connection found, in the same order', async () => {
    const cases: (CallQuery & { q: string })[] = [
      { q: 'needle' },
      { q: 'NeEdLe', binding: 'http-get' },
      { q: '100%' },
      { q: 'under_score' },
      { q: 'r_s' },
      { q: 'back\\slash', operation: 'SendMarkNotes' },
      { q: '"id":"1', ip: '198.51.100.7' },
      { q: 'needle', from: T0 + 20 * MINUTE, to: T0 + 70 * MINUTE },
      { q: 'no such text anywhere' },
      { q: 'only-in-error' },
      { q: 'ONLY-IN-NOTE', binding: 'soap11' },
    ];
    for (const query of cases) {
      const expected = await before(query, 1000);
      const page = await t.app.history.searchText(query, { limit: 1000 });
      expect(
        page.rows.map((r) => r.id),
        JSON.stringify(query),
      ).toEqual(expected);
      expect(page).toMatchObject({ complete: true, next: null });
      // And the unbudgeted search() gives the same.
      const rows = await t.app.history.search(query, { limit: 1000 });
      expect(rows.map((r) => r.id)).toEqual(expected);
    }
    expect((await before({ q: 'needle' }, 1000)).length).toBeGreaterThan(50);
    expect(await before({ q: 'only-in-error' }, 1000)).toHaveLength(22);
    expect(await before({ q: 'only-in-note' }, 1000)).toHaveLength(19);
  });

  it('pages through the matches with nextCursor, as without free text', async () => {
    const expected = await before({ q: 'needle' }, 1000);
    const seen: number[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const { status, body }: Awaited<ReturnType<typeof list>> = await list(
        t,
        `q=needle&limit=7${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(status).toBe(200);
      expect(body.search?.complete).toBe(true);
      seen.push(...body.items.map((c) => c.id));
      cursor = body.nextCursor;
      pages++;
    } while (cursor && pages < 100);
    expect(seen).toEqual(expected);
    expect(pages).toBe(Math.ceil(expected.length / 7));
  });

  it('answers how the search went: complete, calls examined, how far back', async () => {
    const { body } = await list(t, 'q=no-such-text&limit=10');
    expect(body.items).toEqual([]);
    expect(body.nextCursor).toBeNull();
    expect(body.search).toEqual({ complete: true, scanned: 240, scannedBack: new Date(T0).toISOString() });
    // Without free text there is nothing to say.
    expect((await list(t, 'limit=1')).body.search).toBeUndefined();
  });

  it('exports the matches from the worker, batch by batch, and can be stopped early', async () => {
    const expected = await before({ q: 'needle' }, 1000);
    const csv = await t.inject({ method: 'GET', url: '/api/calls/export?format=csv&q=needle' });
    expect(csv.statusCode).toBe(200);
    const ids = csv.body
      .trimEnd()
      .split('\r\n')
      .slice(1)
      .map((line) => Number(line.split(',')[0]));
    expect(ids).toEqual(expected);
    const json = await t.inject({ method: 'GET', url: '/api/calls/export?format=json&q=needle' });
    const rows = json.json() as CallDetail[];
    expect(rows.map((r) => r.id)).toEqual(expected);
    expect(rows[0]?.request).toContain('<body>');

    const batches = t.app.history.scan({ q: 'needle' }, 5);
    const first = await batches.next();
    expect(first.value).toHaveLength(5);
    expect(t.app.history.searchWorker.jobs).toBe(1);
    await batches.return(undefined);
    expect(t.app.history.searchWorker.jobs).toBe(0);
    // A scan that was never read gives its slot back too.
    await t.app.history.scanSummaries({ q: 'needle' }, 5).return(undefined);
    expect(t.app.history.searchWorker.jobs).toBe(0);
  });
});

describe('search budget', () => {
  it('stops a scan when the budget is spent, says so, and continues with the cursor', async () => {
    const t = await startTestApp({ SEARCH_BUDGET_MS: '1' });
    try {
      // 4000 calls of 16 KB: a full scan takes well over a millisecond; 8 of them match.
      const filler = `POST /x HTTP/1.1\r\n\r\n${'x'.repeat(16_000)}`;
      await seed(
        t,
        Array.from({ length: 4000 }, (_, i) =>
          call({ at: T0 + i * MINUTE, request: i % 500 === 250 ? `${filler} needle ${i}` : filler }),
        ),
      );
      const expected = Array.from({ length: 8 }, (_, k) => T0 + (3750 - k * 500) * MINUTE);
      const found: number[] = [];
      let cursor: string | null = null;
      let stops = 0;
      let pages = 0;
      do {
        const { status, body }: Awaited<ReturnType<typeof list>> = await list(
          t,
          `q=needle&limit=50${cursor ? `&cursor=${cursor}` : ''}`,
        );
        expect(status).toBe(200);
        const search = body.search;
        if (!search) throw new Error('no search summary');
        if (!search.complete) {
          stops++;
          // Stopped early: it says how far back it got, and the cursor continues from there.
          expect(search.scanned).toBeGreaterThan(0);
          expect(search.scannedBack).toMatch(/^2026-/);
          expect(body.nextCursor).not.toBeNull();
        }
        found.push(...body.items.map((c) => Date.parse(c.at)));
        cursor = body.nextCursor;
        pages++;
      } while (cursor && pages < 1000);
      expect(stops).toBeGreaterThan(0);
      expect(found).toEqual(expected);
    } finally {
      await t.close();
    }
  });
});

describe('the event loop is not held by a search', () => {
  it('answers /healthz, the GET binding and main-thread queries while a slow search runs', async () => {
    const t = await startTestApp({ SEARCH_BUDGET_MS: '600000' });
    try {
      await seed(t, slowCalls(60));
      let searchDone = false;
      const search = list(t, `q=${SLOW_Q}`).then((r) => {
        searchDone = true;
        return r;
      });
      await workerBusy(t);
      const health = await t.app.inject({ method: 'GET', url: '/healthz' });
      expect(health.statusCode).toBe(200);
      const soap = await t.app.inject({
        method: 'GET',
        url: '/AuthCodeSending.asmx/AuthCode?code=1234&phone=%2B447911123456',
      });
      expect(soap.statusCode).toBe(200);
      expect(await t.app.history.count()).toBe(61);
      const page = await list(t, 'limit=5');
      expect(page.body.items).toHaveLength(5);
      // All of that answered while the search was still scanning. (Its end is not awaited: the
      // worker runs at a lower priority, and on a loaded machine the scan takes long; closing the
      // app answers it, as the lifecycle test checks.)
      expect(searchDone).toBe(false);
      expect(t.app.history.searchWorker.jobs).toBe(1);
      void search.catch(() => {});
    } finally {
      await t.close();
    }
  }, 60_000);
});

describe('search worker limits and lifecycle', () => {
  it('answers 503 with Retry-After when every slot of the worker is taken', async () => {
    const t = await startTestApp({ SEARCH_BUDGET_MS: '1500' });
    try {
      await seed(t, slowCalls(60));
      // 8 slots: the first 8 searches take them, the next ones are refused at once.
      const searches = Array.from({ length: 8 }, () => list(t, `q=${SLOW_Q}`));
      await workerBusy(t, 8);
      const refused = await list(t, `q=${SLOW_Q}`);
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('2');
      expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(refused.body.detail).toMatch(/Too many free-text searches are running at once/);
      expect(refused.body.detail).toMatch(/narrow the search by time, operation or binding/);
      const exported = await t.inject({ method: 'GET', url: `/api/calls/export?q=${SLOW_Q}` });
      expect(exported.statusCode).toBe(503);
      // Searches without free text do not need the worker.
      expect((await list(t, 'limit=1')).status).toBe(200);

      for (const r of await Promise.all(searches)) {
        expect(r.status).toBe(200);
        expect(r.body.search?.complete).toBe(false);
      }
      expect(t.app.history.searchWorker.jobs).toBe(0);
      expect((await list(t, 'q=nothing')).status).toBe(200);
    } finally {
      await t.close();
    }
  });

  it('ends the worker with the app, answering a search under way instead of hanging', async () => {
    const t = await startTestApp({ SEARCH_BUDGET_MS: '600000' });
    await seed(t, slowCalls(200));
    const search = list(t, `q=${SLOW_Q}`);
    await workerBusy(t);
    expect(t.app.history.searchWorker.running).toBe(true);
    await t.close();
    expect(t.app.history.searchWorker.running).toBe(false);
    const res = await search;
    expect(res.status).toBe(503);
    expect(res.body.detail).toBe('The server is shutting down.');
  });
});
