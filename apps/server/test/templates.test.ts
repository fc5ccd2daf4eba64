/**
 * Notification templates: a type matches its template whatever its case and the spaces
 * around it; a second template for the same type is a 409 that names the first; unknown
 * placeholders are a 400 naming the known ones; the types received without a template are listed,
 * from a bounded number of recent calls. On every database the store supports.
 */

import type { MissingTemplates, Problem } from '@school/contract';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OUTBOX_TABLES } from '../src/outbox/index.js';
import { parseDeliveryPayload } from '../src/outbox/payload.js';
import { createTemplateRepository } from '../src/store/catalog.js';
import type { NewCall } from '../src/store/index.js';
import { migrationProvider } from '../src/store/migrations.js';
import type { Database } from '../src/store/schema.js';
import { registerSchool, type TestApp, tempDataDir } from './helpers.js';
import { DIALECTS, freshPostgres, startTestAppOn } from './pg.js';

const DAY = 86_400_000;

/** A successful SendNotificationType call of `type`, recorded at `at`. */
const sent = (type: string, at: number, outcome: NewCall['outcome'] = 'ok'): NewCall => ({
  at,
  group_name: 'NotificationNotes',
  operation: 'SendNotificationType',
  binding: 'http-get',
  caller_ip: '203.0.113.9',
  user_agent: null,
  params: JSON.stringify({ id: '1', baseUrlSchool: 'https://school.example.org/', TypeNotfication: type }),
  outcome,
  status: outcome === 'ok' ? 200 : 400,
  error: null,
  duration_ms: 1,
  request: '',
  request_bytes: 0,
  response: '',
  response_bytes: 0,
  note: null,
  request_id: null,
});

describe.each(DIALECTS)('templates (%s)', (dialect) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestAppOn(dialect);
    await registerSchool(t.app);
  });
  afterAll(async () => {
    await t?.close();
  });

  const api = async <T>(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) => {
    const res = await t.inject({ method, url, ...(payload ? { payload } : {}) });
    return { status: res.statusCode, body: (res.body ? res.json() : undefined) as T };
  };

  it('answers Homework, HOMEWORK and " homework " with the homework template', async () => {
    const created = await api<{ id: number }>('POST', '/api/templates', {
      type: 'homework',
      title: 'Homework at {school}',
      body: 'New homework ({id}).',
    });
    expect(created.status).toBe(201);
    const before = await t.app.store.db.selectFrom('deliveries').select('id').execute();
    for (const [id, type] of [
      ['1', 'Homework'],
      ['2', 'HOMEWORK'],
      ['3', ' homework '],
      ['4', 'homeworks'],
    ] as const) {
      const query = new URLSearchParams({
        id,
        baseUrlSchool: 'https://school.example.org/',
        TypeNotfication: type,
      });
      const res = await t.inject({
        method: 'GET',
        url: `/NotificationNotes.asmx/SendNotificationType?${query}`,
      });
      expect(res.statusCode).toBe(200);
    }
    const rows = await t.app.store.db
      .selectFrom('deliveries')
      .selectAll()
      .where('id', 'not in', before.length > 0 ? before.map((r) => r.id) : [0])
      .orderBy('id')
      .execute();
    const pushes = rows
      .map((r) => parseDeliveryPayload(r))
      .map((p) => (p.kind === 'push' ? p.title : p.kind));
    expect(pushes).toEqual([
      'Homework at Example School',
      'Homework at Example School',
      'Homework at Example School',
      // Another type altogether: the generic template.
      'New notification',
    ]);
    await api('DELETE', `/api/templates/${created.body.id}`);
  });

  it('refuses a second template for a type that differs only by case, naming the first', async () => {
    const first = await api<{ id: number }>('POST', '/api/templates', {
      type: 'News',
      title: 'News',
      body: 'B',
    });
    expect(first.status).toBe(201);
    const again = await api<Problem>('POST', '/api/templates', { type: 'NEWS', title: 'T', body: 'B' });
    expect(again.status).toBe(409);
    expect(again.body.detail).toBe(
      'The News template already answers NEWS: types match whatever their case and surrounding spaces. Edit that one.',
    );
    expect(again.body.errors?.type).toBe(again.body.detail);
    const same = await api<Problem>('POST', '/api/templates', { type: 'News', title: 'T', body: 'B' });
    expect(same.status).toBe(409);
    expect(same.body.detail).toBe('There is already a template for News: edit that one.');

    // Renaming another template onto it is refused the same way; renaming it by case is not.
    const other = await api<{ id: number }>('POST', '/api/templates', {
      type: 'events',
      title: 'T',
      body: 'B',
    });
    const renamed = await api<Problem>('PUT', `/api/templates/${other.body.id}`, {
      type: 'news',
      title: 'T',
      body: 'B',
    });
    expect(renamed.status).toBe(409);
    expect(renamed.body.detail).toMatch(/^The News template already answers news/);
    const recased = await api<{ type: string }>('PUT', `/api/templates/${first.body.id}`, {
      type: 'news',
      title: 'News',
      body: 'B',
    });
    expect(recased.status).toBe(200);
    expect(recased.body.type).toBe('news');
    await api('DELETE', `/api/templates/${first.body.id}`);
    await api('DELETE', `/api/templates/${other.body.id}`);
  });

  it('refuses placeholders the server does not fill, listing the known ones', async () => {
    const refused = await api<Problem>('POST', '/api/templates', {
      type: 'trips',
      title: 'Trip for {class}',
      body: 'At {School}, {id}: {when} and {when}.',
    });
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual({
      title:
        'Unknown placeholder {class}: it would be sent as written. Use {type}, {id}, {id_class}, {baseUrlSchool} and {school}.',
      body: 'Unknown placeholders {School} and {when}: it would be sent as written. Use {type}, {id}, {id_class}, {baseUrlSchool} and {school}. ({School} is written {school}.)',
    });
    expect(refused.body.detail).toBe(
      `In the title: ${refused.body.errors?.title} In the body: ${refused.body.errors?.body}`,
    );
    const list = await api<{ type: string }[]>('GET', '/api/templates');
    expect(list.body.map((x) => x.type)).not.toContain('trips');

    // Known placeholders, and braces that are no placeholder, are fine; so is changing it.
    const ok = await api<{ id: number }>('POST', '/api/templates', {
      type: 'trips',
      title: '{type} at {school}',
      body: 'Item {id} for {id_class} from {baseUrlSchool} { not one } {}',
    });
    expect(ok.status).toBe(201);
    const edit = await api<Problem>('PUT', `/api/templates/${ok.body.id}`, {
      type: 'trips',
      title: 'Trip',
      body: '{ID}',
    });
    expect(edit.status).toBe(400);
    expect(edit.body.errors?.body).toMatch(/^Unknown placeholder \{ID\}: .* \(\{ID\} is written \{id\}\.\)$/);
    await api('DELETE', `/api/templates/${ok.body.id}`);
  });
});

describe.each(DIALECTS)('types received without a template (%s)', (dialect) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestAppOn(dialect);
  });
  afterAll(async () => {
    await t?.close();
  });

  const get = async () => {
    const res = await t.inject({ method: 'GET', url: '/api/templates/missing' });
    expect(res.statusCode).toBe(200);
    return res.json() as MissingTemplates;
  };

  it('lists them with their spellings, counts and last time, from the recent calls only', async () => {
    const { store, recorder } = t.app;
    const now = Date.now();
    const HOUR = DAY / 24;
    for (const call of [
      sent('Sports', now - 40 * DAY), // before the period looked at
      sent('lunch', now - 5 * DAY),
      sent('Sports', now - 4 * DAY),
      sent('Sports', now - 3 * DAY),
      sent(' sports', now - 2 * DAY),
      sent('SPORTS', now - 2 * DAY + 1),
      sent('ghost', now - 36 * HOUR, 'client-error'), // refused: it used no template
      sent('marks', now - 30 * HOUR), // has a template
      sent('', now - 26 * HOUR),
      sent('sports', now - DAY),
    ]) {
      await recorder.record(call);
    }
    const missing = await get();
    expect(Math.abs(Date.parse(missing.since) - (now - 30 * DAY))).toBeLessThan(60_000);
    expect(missing).toMatchObject({ limit: 5000, scanned: 9, limited: false, more: 0 });
    expect(missing.types).toEqual([
      {
        type: 'sports',
        spellings: expect.arrayContaining(['Sports', ' sports', 'SPORTS', 'sports']),
        count: 5,
        lastSeenAt: new Date(now - DAY).toISOString(),
      },
      { type: 'lunch', spellings: ['lunch'], count: 1, lastSeenAt: new Date(now - 5 * DAY).toISOString() },
    ]);
    // The most used spelling first.
    expect(missing.types[0]?.spellings[0]).toBe('Sports');

    // A template for any spelling answers them all.
    const made = await t.inject({
      method: 'POST',
      url: '/api/templates',
      payload: { type: 'SPORTS', title: 'T', body: 'B' },
    });
    expect(made.statusCode).toBe(201);
    expect((await get()).types.map((x) => x.type)).toEqual(['lunch']);

    // However many calls there are, only the newest `limit` are read.
    const bounded = await store.templates.typesWithoutTemplate({ since: now - 30 * DAY, limit: 3 });
    expect(bounded.scanned).toBe(3);
    expect(bounded.types).toEqual([]);
    await t.inject({ method: 'DELETE', url: `/api/templates/${made.json().id}` });
    const newest = await store.templates.typesWithoutTemplate({ since: now - 30 * DAY, limit: 3 });
    expect(newest.types.map((x) => [x.type, x.count])).toEqual([['sports', 1]]);
  });

  it('is for admins only', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/templates/missing' });
    expect(res.statusCode).toBe(401);
  });
});

describe.each(DIALECTS)('school conflicts (%s)', (dialect) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestAppOn(dialect);
  });
  afterAll(async () => {
    await t?.close();
  });

  const post = async (body: object, id?: number) => {
    const res = await t.inject({
      method: id ? 'PUT' : 'POST',
      url: `/api/schools${id ? `/${id}` : ''}`,
      payload: body,
    });
    return { status: res.statusCode, body: res.json() as Problem & { id: number } };
  };
  const school = (name: string, baseUrl: string, topicKey: string) => ({
    name,
    baseUrl,
    topicKey,
    allowedIps: [],
  });

  it('says whether the base URL, the topic key or both clashed, and with which school', async () => {
    const north = await post(school('Northfield', 'https://north.example.org/', 'north'));
    const river = await post(school('Riverside', 'https://river.example.org', 'river'));
    expect([north.status, river.status]).toEqual([201, 201]);

    const url = await post(school('Copy', 'HTTPS://North.example.org', 'copy'));
    expect(url.status).toBe(409);
    expect(url.body.detail).toBe('Northfield already has this base URL (https://north.example.org).');
    expect(url.body.errors).toEqual({ baseUrl: 'Northfield already has this base URL.' });

    const topic = await post(school('Copy', 'https://copy.example.org', 'river'));
    expect(topic.status).toBe(409);
    expect(topic.body.detail).toBe('Riverside already has this topic key (river): choose another.');
    expect(topic.body.errors).toEqual({ topicKey: 'Riverside already has this topic key: choose another.' });

    const both = await post(school('Copy', 'https://north.example.org', 'river'));
    expect(both.body.detail).toBe(
      'Northfield already has this base URL (https://north.example.org), and Riverside this topic key (river).',
    );
    const same = await post(school('Copy', 'https://river.example.org', 'river'));
    expect(same.body.detail).toBe(
      'Riverside already has this base URL (https://river.example.org) and this topic key (river).',
    );

    // Editing a school: its own URL and key are no clash, another's are.
    const edit = await post(
      school('Northfield Academy', 'https://north.example.org', 'river'),
      north.body.id,
    );
    expect(edit.status).toBe(409);
    expect(edit.body.errors).toEqual({ topicKey: 'Riverside already has this topic key: choose another.' });
  });
});

describe.each(DIALECTS)('the template key migration (%s)', (dialect) => {
  it('keys existing templates; of two that differ only by case, the oldest answers', async () => {
    const data = tempDataDir();
    const fresh = dialect === 'postgres' ? await freshPostgres() : undefined;
    const db = new Kysely<Database>({
      dialect: fresh
        ? new PostgresDialect({ pool: new pg.Pool({ connectionString: fresh.url }) })
        : new SqliteDialect({ database: new SQLite(`${data.dir}/old.db`) }),
    });
    try {
      const migrator = new Migrator({ db, provider: migrationProvider(dialect, [OUTBOX_TABLES]) });
      expect((await migrator.migrateTo('0011_outcome_by_status')).error).toBeUndefined();
      for (const type of ['Homework', 'homework', ' Trips ']) {
        await db
          .insertInto('templates')
          .values({ type, title: type, body: 'b', updated_at: 1 } as never)
          .execute();
      }
      expect((await migrator.migrateToLatest()).error).toBeUndefined();
      const rows = await db.selectFrom('templates').select(['type', 'type_key']).orderBy('id').execute();
      expect(rows).toEqual([
        { type: '*', type_key: '*' },
        { type: 'marks', type_key: 'marks' },
        { type: 'Homework', type_key: 'homework' },
        { type: 'homework', type_key: null },
        { type: ' Trips ', type_key: 'trips' },
      ]);
      const templates = createTemplateRepository(db);
      expect((await templates.forType('HOMEWORK'))?.type).toBe('Homework');
      expect((await templates.forType('trips'))?.type).toBe(' Trips ');
      // The unkeyed one is refused a save until its type no longer clashes.
      await expect(templates.update(4, { type: 'homework', title: 't', body: 'b' })).rejects.toThrow(
        /UNIQUE|duplicate key/i,
      );
    } finally {
      await db.destroy();
      await fresh?.drop();
      data.remove();
    }
  });
});
