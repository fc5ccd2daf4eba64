/**
 * `pnpm admin privacy-report --phone …` and `pnpm admin erase-phone --phone …`: a parent's number
 * from the server's own machine, as the console's admins do it (privacy/erasure.ts;
 * docs/security.md#a-parents-phone-number-report-and-erasure). Each is audited as done from the
 * command line, by the number's keyed hash.
 */
import os from 'node:os';
import type { PrivacyErasure } from '@school/contract';
import { configSchema } from '../config.js';
import { createHistory } from '../history/index.js';
import { OUTBOX_TABLES } from '../outbox/index.js';
import {
  eraseNumber,
  erasureHash,
  findHeld,
  numbersByHash,
  type PrivacyDeps,
  UnreadablePhoneError,
} from '../privacy/erasure.js';
import { privacyReportCsv, toPrivacyReport } from '../routes/api/privacy-report.js';
import { loadSealer } from '../secrets/sealer.js';
import { type NewAuditEntry, openStore, type Store } from '../store/index.js';
import { CommandError, EXIT } from './command-error.js';

export interface PrivacyIo {
  readonly out: (text: string) => void;
  readonly env: Record<string, string | undefined>;
}

export interface PrivacyArgs {
  readonly phone?: string | undefined;
  /** erase-phone: the keyed hashes of numbers erased before (a restore brought them back). */
  readonly hash?: readonly string[] | undefined;
  readonly csv?: boolean | undefined;
  readonly json?: boolean | undefined;
}

/** How long a command waits for PostgreSQL before it says it cannot reach it. */
const WAIT_MS = 10_000;

/** The store, History and the erasure's settings, from the server's configuration. */
async function open(io: PrivacyIo): Promise<{ deps: PrivacyDeps; close: () => Promise<void> }> {
  const settings = configSchema
    .pick({
      DATA_DIR: true,
      DATABASE_URL: true,
      SQLITE_SYNCHRONOUS: true,
      CODE_ENCRYPTION_KEY: true,
      DEFAULT_PHONE_REGION: true,
      PROVIDER_TIMEOUT_MS: true,
    })
    .safeParse(io.env);
  if (!settings.success) {
    const lines = settings.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new CommandError(`Invalid configuration:\n${lines.join('\n')}`, EXIT.failed);
  }
  const s = settings.data;
  const sealer = loadSealer({ key: s.CODE_ENCRYPTION_KEY, dataDir: s.DATA_DIR });
  // The store's threads (the search, SQLite's checkpoints) do not keep a process alive: this does,
  // until they have ended, or the process would end (status 1) while the store closes.
  const alive = setInterval(() => {}, 60_000);
  const store = await openStore({
    dataDir: s.DATA_DIR,
    databaseUrl: s.DATABASE_URL,
    synchronous: s.SQLITE_SYNCHRONOUS,
    owners: [OUTBOX_TABLES],
    poolSize: 4,
  });
  try {
    await ready(store);
  } catch (err) {
    await store.close();
    clearInterval(alive);
    throw err;
  }
  const history = createHistory(store);
  return {
    deps: {
      store,
      history,
      sealer,
      defaultPhoneRegion: s.DEFAULT_PHONE_REGION,
      // The outbox's lease (config.ts deliveryLeaseMs): no attempt under way holds a code longer.
      leaseMs: s.PROVIDER_TIMEOUT_MS * 3 + 5000,
    },
    async close() {
      try {
        await history.close();
        await store.close();
      } finally {
        clearInterval(alive);
      }
    },
  };
}

/** Resolves once the database is reached and migrated; rejects after WAIT_MS. */
function ready(store: Store): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(
          new CommandError(`The database could not be reached within ${WAIT_MS / 1000} s.`, EXIT.failed),
        ),
      WAIT_MS,
    );
    void store.whenReady(
      () => {
        clearTimeout(timer);
        resolve();
      },
      (err) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

function audit(store: Store, entry: Omit<NewAuditEntry, 'userId' | 'username' | 'ip'>): Promise<void> {
  let who = 'unknown';
  try {
    who = os.userInfo().username;
  } catch {
    // No user name for this uid (a container): "unknown".
  }
  return store.audit.add({
    ...entry,
    userId: null,
    username: `cli:${who}`.slice(0, 64),
    ip: 'command line',
    details: { ...entry.details, by: 'command line' },
  });
}

const targetOf = (hash: string) => `phone number (keyed hash ${hash.slice(0, 16)}…)`;

function phoneOf(args: PrivacyArgs, usage: string): string {
  if (!args.phone?.trim())
    throw new CommandError(`Give the number: --phone NUMBER.\n\n${usage}`, EXIT.failed);
  return args.phone;
}

/** A number that is none: said in the operator's terms. */
function unreadable(err: unknown): never {
  if (err instanceof UnreadablePhoneError) throw new CommandError(err.message, EXIT.failed);
  throw err;
}

export const PRIVACY_HELP = {
  'privacy-report': `Usage: pnpm admin privacy-report --phone NUMBER [--csv]

Everything held about a phone number: the calls whose phone it is or whose texts hold it in any
spelling, their deliveries and attempts, SMS sent to it, the audit entries that name it, the limit
slots kept for it. JSON on standard output (the API's PrivacyReport), or CSV with --csv. The
number as the operations read it: international (+44 7400 123456, 0044…), or national in
DEFAULT_PHONE_REGION; spaces, dashes and dots are fine.

The report holds the number: write it where only its reader can read it. Audited by the number's
keyed hash.`,
  'erase-phone': `Usage: pnpm admin erase-phone --phone NUMBER [--json]
       pnpm admin erase-phone --hash HASH [--hash HASH …] [--json]

Erases a phone number from every place the server holds it, as an admin's erasure from the console
does: what is still on its way to it is cancelled, then [erased] stands in its place in every call,
delivery, attempt, audit entry and roll-up (the rows stay: counts and the Dashboard do not change);
then SQLite's log is checkpointed to nothing, or what PostgreSQL rewrote is VACUUMed. Says what
changed, and the keyed hash it is audited by (--json: the API's PrivacyErasure). Safe while the
server runs.

--hash: the erasures made before, by the keyed hashes their audit entries and answers give, made
again (after restoring a backup taken before them: docs/deployment.md#erasures-and-backups). Each
number of the calls' phones and the SMS' recipients is hashed under the same key
(CODE_ENCRYPTION_KEY or the key file) and those that match are erased; a hash that matches none
is said so (nothing held, or only in texts of calls from before calls kept their phone).`,
} as const;

/** An erasure in the operator's words. */
function describeErasure(erased: PrivacyErasure): string {
  const { disk } = erased;
  const diskLine =
    disk.walTruncated === null
      ? `VACUUMed: ${disk.vacuumed.length === 0 ? 'nothing to' : disk.vacuumed.join(', ')}`
      : disk.walTruncated
        ? 'SQLite write-ahead log checkpointed and truncated'
        : 'SQLite write-ahead log NOT truncated (a reader held it): run the command again';
  return [
    `Erased in ${erased.tookMs} ms: ${erased.calls} calls, ${erased.deliveries} deliveries (${erased.cancelled} cancelled on their way), ${erased.attempts} attempts, ${erased.audit} audit entries, ${erased.rollups} roll-up rows, ${erased.limitSlots} limit slots.`,
    `${diskLine}.`,
    `Audited as keyed hash ${erased.hash}.`,
    '',
  ].join('\n');
}

export const PRIVACY_COMMANDS: Record<
  keyof typeof PRIVACY_HELP,
  (args: PrivacyArgs, io: PrivacyIo) => Promise<void>
> = {
  async 'privacy-report'(args, io) {
    const phone = phoneOf(args, PRIVACY_HELP['privacy-report']);
    const { deps, close } = await open(io);
    try {
      const report = toPrivacyReport(await findHeld(deps, phone).catch(unreadable), Date.now());
      const hash = erasureHash(deps.sealer, report.phone);
      await audit(deps.store, {
        action: 'privacy-report',
        target: targetOf(hash),
        details: {
          hash,
          format: args.csv ? 'csv' : 'json',
          calls: report.calls.length,
          deliveries: report.deliveries.length,
          audit: report.audit.length,
        },
      });
      io.out(args.csv ? privacyReportCsv(report) : `${JSON.stringify(report, null, 2)}\n`);
    } finally {
      await close();
    }
  },

  async 'erase-phone'(args, io) {
    const hashes = args.hash ?? [];
    if (hashes.length > 0 && args.phone !== undefined)
      throw new CommandError(
        `Give --phone or --hash, not both.\n\n${PRIVACY_HELP['erase-phone']}`,
        EXIT.failed,
      );
    for (const h of hashes)
      if (!/^[0-9a-fA-F]{64}$/.test(h))
        throw new CommandError(`Not a keyed hash (64 hex digits): ${h}.`, EXIT.failed);
    const phones = hashes.length > 0 ? [] : [phoneOf(args, PRIVACY_HELP['erase-phone'])];
    const { deps, close } = await open(io);
    try {
      if (hashes.length > 0) {
        const found = await numbersByHash(deps, hashes);
        for (const h of hashes) {
          const number = found.get(h.toLowerCase());
          if (number) phones.push(number);
          else if (!args.json) io.out(`${h}: no number held matches it (nothing to erase).\n`);
        }
      }
      const results: PrivacyErasure[] = [];
      for (const phone of phones) {
        const erased = await eraseNumber(deps, phone).catch(unreadable);
        results.push(erased);
        const { hash, tookMs: _took, disk, ...counts } = erased;
        await audit(deps.store, {
          action: 'privacy-erase',
          target: targetOf(hash),
          details: {
            hash,
            ...counts,
            walTruncated: disk.walTruncated,
            vacuumed: disk.vacuumed.length,
            ...(hashes.length > 0 ? { again: true } : {}),
          },
        });
        if (!args.json) io.out(describeErasure(erased));
      }
      if (args.json) io.out(`${JSON.stringify(hashes.length > 0 ? results : results[0], null, 2)}\n`);
    } finally {
      await close();
    }
  },
};
