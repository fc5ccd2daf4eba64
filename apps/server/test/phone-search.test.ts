/**
 * A parent's number typed into History's search box is found as the Phone filter finds it:
 * through the index of the calls' phone, in any spelling the filter takes, to the end of the
 * history whatever the free-text budget. The same number in double quotes is searched as text,
 * which finds the calls that only mention it.
 */
import type { CallList } from '@school/contract';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callRow, type TestApp } from './helpers.js';
import { DIALECTS, startTestAppOn } from './pg.js';

const NUMBER = '+447400123456';
/** Calls newer than the parent's: more than a free-text search examines in its budget. */
const NEWER = 300;

describe.each(DIALECTS)("a phone number typed as History's search text (%s)", (dialect) => {
  let t: TestApp;
  const ids: Record<string, number> = {};

  const authCode = async (phone: string) => {
    const res = await t.inject({
      method: 'GET',
      url: `/AuthCodeSending.asmx/AuthCode?code=4821&phone=${encodeURIComponent(phone)}`,
    });
    expect(res.statusCode, res.body).toBe(200);
    const [call] = await t.app.history.list({ limit: 1 });
    return call?.id as number;
  };
  const list = async (query: string) => {
    const res = await t.inject({ method: 'GET', url: `/api/calls?${query}` });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as CallList;
  };
  const idsOf = (body: CallList) => body.items.map((c) => c.id);
  const searched = (text: string, more = '') => list(`q=${encodeURIComponent(text)}${more}`);
  /** Records a call and answers its id. */
  const recorded = async (overrides: Parameters<typeof callRow>[0]) => {
    await t.app.recorder.record(callRow(overrides));
    const [call] = await t.app.history.list({ limit: 1 });
    return call?.id as number;
  };

  beforeAll(async () => {
    // A budget no free-text search finishes in: what is found here was not found by examining calls.
    t = await startTestAppOn(dialect, {
      DEFAULT_PHONE_REGION: 'GB',
      SMS_ALLOWED_COUNTRIES: 'GB',
      SEARCH_BUDGET_MS: '1',
      // On PostgreSQL, a partition a day, as at a country's scale: History reads them in windows.
      PARTITION_PERIOD: 'day',
    });
    ids.international = await authCode(NUMBER);
    ids.national = await authCode('07400 123456');
    ids.other = await authCode('+447400123457');
    const now = Date.now();
    await Promise.all(
      Array.from({ length: NEWER }, (_, i) =>
        t.app.recorder.record(
          callRow({ at: now + 1000 + i, request: `POST /x HTTP/1.1\r\n\r\n<n>${i}</n>` }),
        ),
      ),
    );
    // The number in another call's text only: a note, and an AuthCode call recorded before calls
    // kept their phone (migration 0020).
    ids.mention = await recorded({
      at: now + 5000,
      group_name: 'NotiSending',
      operation: 'SendMarkNotes',
      params: JSON.stringify({ note: 'Please ring the parent on 07400123456.' }),
      phone: null,
    });
    ids.legacy = await recorded({
      at: now + 6000,
      params: JSON.stringify({ code: '***', phone: NUMBER }),
      phone: null,
    });
    // The number in a call's error text alone (a gateway's refusal quoting it), and in a note
    // alone: neither its parameters, request, answer nor phone hold it.
    ids.inError = await recorded({
      at: now + 7000,
      params: JSON.stringify({ code: '***', phone: '+447911123456' }),
      phone: '+447911123456',
      outcome: 'server-error',
      status: 500,
      error: 'Gateway refused: +447400123456 is barred.',
    });
    ids.inNote = await recorded({
      at: now + 8000,
      group_name: 'NotiSending',
      operation: 'SendNotificationType',
      params: JSON.stringify({ id: '5', TypeNotfication: 'trip' }),
      phone: null,
      note: 'Push queued; the office will ring 07400123456 as well.',
    });
  });
  afterAll(() => t?.close());

  it('finds the calls for the number, whichever way it is typed, to the end whatever the budget', async () => {
    const both = [ids.national, ids.international];
    expect(idsOf(await list(`phone=${encodeURIComponent(NUMBER)}`))).toEqual(both);
    for (const typed of [
      '07400 123456',
      '+44 7400 123456',
      NUMBER,
      '0044 7400 123456',
      '(07400) 123-456',
      ' 07400-123-456 ',
    ]) {
      const body = await searched(typed);
      expect(idsOf(body), typed).toEqual(both);
      expect(body.nextCursor, typed).toBeNull();
      expect(body.search, typed).toMatchObject({ complete: true, phone: NUMBER });
    }
    expect(idsOf(await searched('+447400123457'))).toEqual([ids.other]);
  });

  it('pages through them with nextCursor, as the Phone filter does', async () => {
    const first = await searched('07400 123456', '&limit=1');
    expect(idsOf(first)).toEqual([ids.national]);
    expect(first.search).toMatchObject({ complete: true, phone: NUMBER });
    expect(first.nextCursor).not.toBeNull();
    const second = await searched('07400 123456', `&limit=1&cursor=${first.nextCursor}`);
    expect(idsOf(second)).toEqual([ids.international]);
    expect(second.nextCursor).toBeNull();
  });

  it('counts and exports what it lists', async () => {
    const count = await t.inject({ method: 'GET', url: '/api/calls/count?q=07400%20123456' });
    expect(count.json()).toEqual({ count: 2, more: false });
    const csv = await t.inject({ method: 'GET', url: '/api/calls/export?format=csv&q=07400%20123456' });
    expect(csv.statusCode).toBe(200);
    expect(csv.body.trim().split('\n')).toHaveLength(3);
  });

  it('searches a text that is no phone number as free text, as before', async () => {
    // Too short for a number: the text is examined in the newest calls, under the budget.
    const short = await searched('+4474001234');
    expect(short.search?.phone).toBeUndefined();
    expect(idsOf(short)).toContain(ids.legacy);
    const words = await searched('ring the parent');
    expect(words.search?.phone).toBeUndefined();
    expect(idsOf(words)).toEqual([ids.mention]);
    // A number in a sentence is the sentence.
    const sentence = await searched(`ring ${NUMBER}`);
    expect(sentence.search?.phone).toBeUndefined();
  });

  it('searches the number in double quotes as text: the calls that only mention it', async () => {
    const body = await searched('"07400 123456"');
    expect(body.search?.phone).toBeUndefined();
    expect(idsOf(body).slice(2, 4)).toEqual([ids.legacy, ids.mention]);
    // Typed without quotes, the number is the phone's calls alone.
    expect(idsOf(await searched('07400 123456'))).not.toContain(ids.mention);
  });

  it('finds in the error text and the note what they alone hold, as text', async () => {
    // The number in double quotes, as national digits: in either text, whatever its prefix there.
    expect(idsOf(await searched('"07400 123456"')).slice(0, 2)).toEqual([ids.inNote, ids.inError]);
    expect(idsOf(await searched('is BARRED'))).toEqual([ids.inError]);
    expect(idsOf(await searched('office will ring'))).toEqual([ids.inNote]);
    // Unquoted, the number is its phone's calls: these are not, whatever their texts say.
    const asPhone = idsOf(await searched('07400 123456'));
    expect(asPhone).not.toContain(ids.inError);
    expect(asPhone).not.toContain(ids.inNote);
  });

  it('keeps the text as text when the Phone filter names another number', async () => {
    const body = await searched('07400 123456', '&phone=%2B447400123457');
    expect(body.search?.phone).toBeUndefined();
    expect(body.items).toEqual([]);
  });

  it.runIf(dialect === 'postgres')("reads the calls through the phone's index alone", async () => {
    const sent = await sentDuring(() => searched('07400 123456'));
    // No free text was searched: its chunks match the text columns with LIKE.
    expect(sent.filter(({ text }) => / LIKE /i.test(text))).toEqual([]);
    // The server's background work (the outbox, the roll-ups) reads calls too: the lookup's
    // statements are those that name a phone.
    const statements = sent.filter(({ text }) => /"phone" = \$/.test(text));
    expect(statements.length).toBeGreaterThan(0);
    const plans = [];
    const client = await (t.app.store.readPool as NonNullable<typeof t.app.store.readPool>).connect();
    try {
      for (const { text, values } of statements) {
        const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
          `EXPLAIN (FORMAT JSON) ${text}`,
          values,
        );
        const [row] = rows;
        const scans = row ? callScans(row['QUERY PLAN'][0].Plan) : [];
        if (scans.length > 0) plans.push({ text, scans });
      }
    } finally {
      client.release();
    }
    // The day's partition among them: the lookup is planned over the partitions, each its own index.
    expect(plans.flatMap((p) => p.scans.map((s) => s.index))).toContainEqual(
      expect.stringMatching(/^calls_p\d{8}_phone/),
    );
    for (const { text, scans } of plans)
      for (const scan of scans) expect(scan.index ?? `${scan.node} (no index)`, text).toMatch(/phone/);
  });
});

/** The SQL the server sent to PostgreSQL while `run` ran (it shares this process's `pg`). */
async function sentDuring(run: () => Promise<unknown>): Promise<{ text: string; values: unknown[] }[]> {
  const sent: { text: string; values: unknown[] }[] = [];
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    if (typeof args[0] === 'string') sent.push({ text: args[0], values: (args[1] as unknown[]) ?? [] });
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  try {
    await run();
  } finally {
    pg.Client.prototype.query = query;
  }
  return sent;
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

/** Each read of a table of calls in a plan, with the index it went through (none: a Seq Scan). */
function callScans(node: PlanNode): { node: string; index: string | undefined }[] {
  const below = (node.Plans ?? []).flatMap(callScans);
  if (!/^calls(_|$)/.test(node['Relation Name'] ?? '')) return below;
  // A bitmap heap scan reads its table through the bitmap index scans under it.
  const index =
    node['Index Name'] ?? (node.Plans ?? []).map((p) => p['Index Name']).find((n) => n !== undefined);
  return [{ node: node['Node Type'], index }, ...below];
}
