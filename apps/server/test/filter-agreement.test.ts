/**
 * The live tail (GET /api/calls/stream) filters each new call in memory with `matchesCall`; the
 * history list and the exports filter the same calls in SQL (the main connection, and the search
 * worker for free text). A staff member watching History with Live on must see exactly the calls
 * a reload would list: generated calls and filters, every combination of filters, both sides.
 *
 * Free text is case-insensitive on both sides by the same rule: SQLite's LIKE folds ASCII letters
 * only, and so does `matchesCall` (it used String#toLowerCase, all of Unicode, until this test showed
 * the two parting on `élève`, the Kelvin sign, İ and a final Σ).
 */
import { BINDINGS, OUTCOMES, UNKNOWN_OPERATION } from '@school/contract';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CallQuery, matchesCall } from '../src/history/index.js';
import type { CallRow, NewCall } from '../src/store/index.js';
import { startTestApp, type TestApp } from './helpers.js';

const SEED = 20_261_101;
const MINUTE = 60_000;
const T0 = Date.parse('2026-11-01T10:00:00.000Z');
const OPERATIONS = ['AuthCode', 'SendMarkNotes', 'pushNoti', null] as const;
const IPS = ['203.0.113.1', '198.51.100.7', '2001:db8::1', '::ffff:203.0.113.1'] as const;
const PHONES = ['+447911123456', '+33612345678'] as const;

/**
 * Characters of the texts: ASCII letters in both cases, digits, LIKE's own metacharacters and its
 * escape character, JSON and HTTP punctuation, and non-ASCII characters that come in one case only
 * here (lower-case é and ü, upper-case Ж, caseless 中, €, an emoji outside the BMP). No NUL: SQLite
 * ends a LIKE pattern, and the text it reads, at the first NUL, so History does not search a `q`
 * holding one as typed (a known difference, left out here).
 */
const AGREEING = [...'aAbBnNzZ07%_\\ ":=&/', '\r\n', 'é', 'ü', 'Ж', '中', '€', '😀'];
/** Non-ASCII letters in both cases, and the ones whose lower case is special (Kelvin sign, İ, Σ). */
const CASE_PAIRS = ['É', 'é', 'Ü', 'ü', 'ж', 'Ж', '\u212A', 'k', 'K', 'İ', 'i', 'I', 'Σ', 'σ', 'ς', 'ẞ', 'ß'];

const textOf = (alphabet: readonly string[], maxLength: number) =>
  fc.array(fc.constantFrom(...alphabet), { maxLength }).map((chars) => chars.join(''));

function callArb(alphabet: readonly string[]): fc.Arbitrary<NewCall> {
  const text = textOf(alphabet, 10);
  return fc
    .record({
      minute: fc.integer({ min: 0, max: 10 }),
      operation: fc.constantFrom(...OPERATIONS),
      binding: fc.constantFrom(...BINDINGS),
      outcome: fc.constantFrom(...OUTCOMES),
      ip: fc.constantFrom(...IPS),
      phone: fc.option(fc.constantFrom(...PHONES), { nil: null }),
      school: fc.constantFrom(1, 2, 1, 2, null),
      params: fc.option(fc.dictionary(fc.constantFrom('code', 'phone', 'id'), text, { maxKeys: 2 }), {
        nil: null,
      }),
      query: text,
      body: text,
      answer: text,
      error: fc.option(text, { nil: null }),
      note: fc.option(text, { nil: null }),
    })
    .map(
      (c): NewCall => ({
        at: T0 + c.minute * MINUTE,
        group_name: 'AuthCodeSending',
        operation: c.operation,
        binding: c.binding,
        caller_ip: c.ip,
        user_agent: 'property',
        params: c.params === null ? null : JSON.stringify(c.params),
        phone: c.phone,
        outcome: c.outcome,
        status: c.outcome === 'ok' ? 200 : c.outcome === 'client-error' ? 400 : 500,
        error: c.error,
        duration_ms: 1,
        // Around the generated text, nothing a short `q` of the alphabet would find by itself.
        request: `GET /?${c.query} HTTP/1.1\r\n\r\n${c.body}`,
        request_bytes: 1,
        response: `HTTP/1.1 200 OK\r\n\r\n${c.answer}`,
        response_bytes: 1,
        note: c.note,
        school_id: c.school,
      }),
    );
}

/** Free text: empty, a few characters of the alphabet, or a piece of a call's text in other (ASCII) case. */
function qArb(calls: readonly NewCall[], alphabet: readonly string[]): fc.Arbitrary<string> {
  const short = textOf(alphabet, 3);
  if (calls.length === 0) return fc.oneof(fc.constant(''), short);
  const piece = fc
    .record({
      call: fc.nat(),
      field: fc.constantFrom('params', 'request', 'response', 'error', 'note') as fc.Arbitrary<
        'params' | 'request' | 'response' | 'error' | 'note'
      >,
      start: fc.nat(),
      length: fc.integer({ min: 1, max: 6 }),
      flips: fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
    })
    .map(({ call, field, start, length, flips }) => {
      // By code point: a URL-decoded `q` never holds half a surrogate pair.
      const chars = Array.from(calls[call % calls.length]?.[field] ?? '');
      const from = chars.length === 0 ? 0 : start % chars.length;
      const flip = (c: string) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase());
      return chars
        .slice(from, from + length)
        .map((c, i) => (flips[i] && /^[a-z]$/i.test(c) ? flip(c) : c))
        .join('');
    });
  return fc.oneof(fc.constant(''), short, piece, piece);
}

/** One value for every filter and a school scope; each test below tries all 256 subsets of it. */
function fullQueryArb(calls: readonly NewCall[], alphabet: readonly string[]) {
  const time = fc.integer({ min: -1, max: 11 }).map((m) => T0 + m * MINUTE);
  return fc.record({
    // UNKNOWN_OPERATION: the calls whose operation was not recognised (null).
    operation: fc.constantFrom(
      'AuthCode',
      'SendMarkNotes',
      'pushNoti',
      'GetBookPdfByTerm',
      UNKNOWN_OPERATION,
    ),
    binding: fc.constantFrom(...BINDINGS),
    outcome: fc.constantFrom(...OUTCOMES),
    from: time,
    to: time,
    ip: fc.constantFrom(...IPS, '203.0.113.2'),
    phone: fc.constantFrom(...PHONES, '+12025550123'),
    q: qArb(calls, alphabet),
    // Whose calls a member of staff limited to schools reads (store/school-scope.ts).
    scope: fc.constantFrom<readonly number[]>([1], [2], [1, 2], [1, 2], [2, 1], []),
  });
}

const KEYS = ['operation', 'binding', 'outcome', 'from', 'to', 'ip', 'phone', 'q'] as const;
type FullQuery = { [K in (typeof KEYS)[number] | 'scope']-?: NonNullable<CallQuery[K]> };

/**
 * Every combination of the filters: the subset of KEYS named by each bit of 0…255; a quarter of
 * them (those of 1, 5 or 9 filters) read within the school scope too.
 */
function* subsets(full: FullQuery): Generator<CallQuery> {
  for (let mask = 0; mask < 1 << KEYS.length; mask++) {
    const query: Record<string, unknown> = {};
    let count = 0;
    KEYS.forEach((key, bit) => {
      if (mask & (1 << bit)) {
        query[key] = full[key];
        count++;
      }
    });
    if (count % 4 === 1) query.scope = full.scope;
    yield query as CallQuery;
  }
}

/** `matchesCall` with ASCII-only case folding: what SQLite's LIKE does. */
function matchesFoldingAsciiOnly(query: CallQuery, row: CallRow): boolean {
  const fold = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase());
  if (!matchesCall({ ...query, q: undefined }, row)) return false;
  if (!query.q) return true;
  const q = fold(query.q);
  return [row.params, row.request, row.response, row.error, row.note].some((t) => fold(t ?? '').includes(q));
}

const ids = (rows: readonly { id: number }[]) => rows.map((r) => r.id).sort((a, b) => a - b);

describe('the live tail and the history list pass the same calls', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  /**
   * Replaces the history with `calls` in one commit and answers the rows as the live tail got
   * them (the store's `recorded` event), in the order recorded.
   */
  async function replaceHistory(calls: readonly NewCall[]): Promise<CallRow[]> {
    await t.app.store.db.deleteFrom('calls').execute();
    const seen: CallRow[] = [];
    const listener = (rows: CallRow[]) => seen.push(...rows);
    t.app.history.live.events.on('recorded', listener);
    try {
      await Promise.all(calls.map((c) => t.app.recorder.record(c)));
    } finally {
      t.app.history.live.events.off('recorded', listener);
    }
    expect(seen).toHaveLength(calls.length);
    return seen;
  }

  /** The ids the history list answers for `query` (all of them: no page is ever full). */
  async function historyIds(query: CallQuery): Promise<number[]> {
    return ids(await t.app.history.search(query, { limit: 1000 }));
  }

  it('for every combination of filters, on texts whose non-ASCII letters have one case', async () => {
    const scenario = fc
      .array(callArb(AGREEING), { maxLength: 25 })
      .chain((calls) => fc.tuple(fc.constant(calls), fullQueryArb(calls, AGREEING)));
    const RUNS = 100;
    let compared = 0;
    let nonEmpty = 0;
    let textHits = 0;
    await fc.assert(
      fc.asyncProperty(scenario, async ([calls, full]) => {
        const rows = await replaceHistory(calls);
        for (const query of subsets(full as FullQuery)) {
          const live = ids(rows.filter((row) => matchesCall(query, row)));
          expect(await historyIds(query), JSON.stringify(query)).toEqual(live);
          compared++;
          if (live.length > 0) nonEmpty++;
          if (query.q && live.length > 0 && live.length < rows.length) textHits++;
        }
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    // The generated filters pick some calls and leave others, free text included.
    expect(compared).toBe(RUNS * 256);
    expect(nonEmpty / compared).toBeGreaterThan(0.1);
    expect(textHits).toBeGreaterThan(100);
  });

  it('free text folds the case of ASCII letters only, on any text, in History and the live tail alike', async () => {
    const alphabet = [...AGREEING, ...CASE_PAIRS];
    const scenario = fc
      .array(callArb(alphabet), { maxLength: 20 })
      .chain((calls) =>
        fc.tuple(
          fc.constant(calls),
          fc.array(fc.oneof(qArb(calls, alphabet), textOf(CASE_PAIRS, 2)), { minLength: 1, maxLength: 8 }),
        ),
      );
    await fc.assert(
      fc.asyncProperty(scenario, async ([calls, texts]) => {
        const rows = await replaceHistory(calls);
        for (const q of texts) {
          const rule = ids(rows.filter((row) => matchesFoldingAsciiOnly({ q }, row)));
          expect(await historyIds({ q }), JSON.stringify(q)).toEqual(rule);
          // And the live tail passes exactly those, whatever the case of the non-ASCII letters.
          expect(ids(rows.filter((row) => matchesCall({ q }, row))), JSON.stringify(q)).toEqual(rule);
        }
      }),
      { seed: SEED, numRuns: 100, endOnFailure: true },
    );
  });

  it('agrees with the live tail on the case of non-ASCII letters too', async () => {
    const texts = {
      acute: 'Élève',
      kelvin: '300 \u212A',
      dottedI: 'İstanbul',
      finalSigma: 'ΟΔΟΣ',
    };
    const rows = await replaceHistory(
      Object.values(texts).map((text, i) => ({
        at: T0 + i,
        group_name: 'AuthCodeSending',
        operation: 'AuthCode',
        binding: 'http-get',
        caller_ip: '203.0.113.1',
        user_agent: null,
        params: JSON.stringify({ code: text }),
        outcome: 'ok',
        status: 200,
        error: null,
        duration_ms: 1,
        request: '',
        request_bytes: 0,
        response: '',
        response_bytes: 0,
      })),
    );
    const [acute, kelvin, dottedI, finalSigma] = rows.map((r) => r.id);
    const both = async (q: string) => ({
      live: ids(rows.filter((row) => matchesCall({ q }, row))),
      history: await historyIds({ q }),
    });
    // Same case: both find it; another case of a non-ASCII letter, or its Unicode lower case: neither.
    expect(await both('Élève')).toEqual({ live: [acute], history: [acute] });
    expect(await both('élève')).toEqual({ live: [], history: [] });
    expect(await both('300 k')).toEqual({ live: [], history: [] });
    expect(await both('i\u0307stanbul')).toEqual({ live: [], history: [] });
    expect(await both('Σ')).toEqual({ live: [finalSigma], history: [finalSigma] });
    // ASCII letters in any case: both.
    expect(await both('STANBUL')).toEqual({ live: [dottedI], history: [dottedI] });
    expect(kelvin).toBeDefined();
  });
});
