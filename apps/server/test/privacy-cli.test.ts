/**
 * `pnpm admin privacy-report` and `pnpm admin erase-phone` (issue 45): the built command run as a
 * process beside a running server on the same store, as an operator would on the server's machine.
 */
import type { CallDetail, PrivacyErasure, PrivacyReport } from '@school/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { erasureHash } from '../src/privacy/erasure.js';
import { loadSealer } from '../src/secrets/sealer.js';
import { runAdmin } from './admin-process.js';
import { callRow, TEST_CODE_KEY, type TestApp } from './helpers.js';
import { DIALECTS, startTestAppOn } from './pg.js';

const PHONE = '+447458913276';

describe.each(DIALECTS)('pnpm admin privacy-report and erase-phone (%s)', (dialect) => {
  let t: TestApp;
  let env: Record<string, string>;
  let callId: number;
  beforeAll(async () => {
    t = await startTestAppOn(dialect, { DEFAULT_PHONE_REGION: 'GB' });
    env = {
      DEFAULT_PHONE_REGION: 'GB',
      ...(t.config.DATABASE_URL
        ? { DATABASE_URL: t.config.DATABASE_URL, CODE_ENCRYPTION_KEY: TEST_CODE_KEY }
        : { DATA_DIR: t.dataDir }),
    };
    const res = await t.app.inject({
      method: 'GET',
      url: '/AuthCodeSending.asmx/AuthCode?code=3276&phone=07458-913276',
    });
    expect(res.statusCode).toBe(200);
    callId = (await t.app.history.list({ limit: 1 }))[0]?.id as number;
    await t.app.outbox.idle();
  });
  afterAll(() => t.close());

  const admin = (args: string[]) => runAdmin(args, env);
  const cliAudit = async () =>
    (await t.app.store.audit.search({}, { limit: 100 })).filter((r) => r.username?.startsWith('cli:'));
  const hash = () =>
    erasureHash(
      dialect === 'postgres'
        ? loadSealer({ key: TEST_CODE_KEY, dataDir: t.dataDir })
        : loadSealer({ dataDir: t.dataDir }),
      PHONE,
    );

  it('reports what is held about the number as JSON or CSV, audited by its keyed hash', async () => {
    const json = await admin(['privacy-report', '--phone', '+44 7458 913276']);
    expect(json.status, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout) as PrivacyReport;
    expect(report.phone).toBe(PHONE);
    expect(report.calls.map((c) => c.id)).toEqual([callId]);
    expect(report.deliveries).toHaveLength(1);
    const csv = await admin(['privacy-report', '--phone', '07458913276', '--csv']);
    expect(csv.status, csv.stderr).toBe(0);
    expect(csv.stdout.split('\r\n')[0]).toBe('record,id,callId,deliveryId,at,what,status,detail');
    expect(csv.stdout).toContain(`\r\ncall,${callId},${callId},`);
    const [entry] = await cliAudit();
    expect(entry).toMatchObject({ action: 'privacy-report', ip: 'command line' });
    expect(JSON.parse(entry?.details ?? '{}')).toMatchObject({ hash: hash(), by: 'command line' });
    expect(JSON.stringify(entry)).not.toContain('7458913276');
  });

  it('refuses what is no number, and a missing one', async () => {
    const none = await admin(['erase-phone', '--phone', 'twelve']);
    expect(none.status).toBe(1);
    expect(none.stderr).toContain('This is not a phone number.');
    const missing = await admin(['privacy-report']);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('Give the number: --phone NUMBER.');
    const help = await admin(['erase-phone', '--help']);
    expect(help).toMatchObject({ status: 0 });
    expect(help.stdout).toContain('Usage: pnpm admin erase-phone --phone NUMBER');
  });

  it('erases the number beside the running server, which shows [erased] at once', async () => {
    const res = await admin(['erase-phone', '--phone', '0044 7458 913276']);
    expect(res.status, res.stderr).toBe(0);
    expect(res.stdout).toMatch(
      /^Erased in [\d.]+ ms: 1 calls, 1 deliveries \(0 cancelled on their way\), 0 attempts, 0 audit entries, 0 roll-up rows, 0 limit slots\.\n/,
    );
    expect(res.stdout).toContain(`Audited as keyed hash ${hash()}.`);
    expect(res.stdout).toContain(
      dialect === 'sqlite' ? 'SQLite write-ahead log checkpointed and truncated.' : 'VACUUMed: calls_p',
    );
    const detail = (await t.inject({ method: 'GET', url: `/api/calls/${callId}` })).json() as CallDetail;
    expect(detail.params).toMatchObject({ phone: '[erased]' });
    expect(detail.note).toBe('SMS queued to [erased].');
    const again = await admin(['erase-phone', '--phone', PHONE, '--json']);
    expect(again.status, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout) as PrivacyErasure).toMatchObject({
      calls: 0,
      deliveries: 0,
      hash: hash(),
    });
    expect((await cliAudit()).filter((e) => e.action === 'privacy-erase')).toHaveLength(2);
  });

  it('erases again by the keyed hash alone what a restore brought back', async () => {
    // As a backup from before the erasure would hold it.
    const restored = await t.app.store.db
      .insertInto('calls')
      .values(
        callRow({ at: Date.now() - 5000, phone: PHONE, params: JSON.stringify({ phone: '07458 913276' }) }),
      )
      .returning('id')
      .executeTakeFirstOrThrow();
    const unknown = 'ab'.repeat(32);
    const res = await admin(['erase-phone', '--hash', hash(), '--hash', unknown]);
    expect(res.status, res.stderr).toBe(0);
    expect(res.stdout).toContain(`${unknown}: no number held matches it (nothing to erase).`);
    expect(res.stdout).toMatch(/Erased in [\d.]+ ms: 1 calls, 0 deliveries/);
    const detail = (await t.inject({ method: 'GET', url: `/api/calls/${restored.id}` })).json() as CallDetail;
    expect(detail.params).toEqual({ phone: '[erased]' });
    const [entry] = (await cliAudit()).filter((e) => e.action === 'privacy-erase');
    expect(JSON.parse(entry?.details ?? '{}')).toMatchObject({ hash: hash(), again: true, calls: 1 });
    const wrong = await admin(['erase-phone', '--hash', 'nope']);
    expect(wrong.status).toBe(1);
    expect(wrong.stderr).toContain('Not a keyed hash (64 hex digits): nope.');
  });
});
