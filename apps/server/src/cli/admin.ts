/**
 * `pnpm admin …`: the server operator's command line for staff accounts (docs/security.md#the-admin-command-line),
 * on the same store as the server (DATA_DIR or DATABASE_URL, from the environment or .env), safe
 * while the server runs: every change is one statement the server reads at its next request.
 * Passwords come from standard input, never from the arguments. Each change is audited as done
 * from the command line. Backups of the embedded store are taken, checked and restored here too
 * (backup.ts, restore.ts; docs/deployment.md#backups-and-restore), and a parent's phone number
 * is reported and erased (privacy.ts; docs/security.md#a-parents-phone-number-report-and-erasure).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import {
  ALL_SCHOOLS,
  passwordSchema,
  type Role,
  roleSchema,
  schoolIdsSchema,
  usernameSchema,
} from '@school/contract';
import { hashPassword } from '../auth/password.js';
import { configSchema } from '../config.js';
import { OUTBOX_TABLES } from '../outbox/index.js';
import { createFilesPrivately } from '../private-files.js';
import type { NewAuditEntry, StaffStore, UserRow } from '../store/index.js';
import { openStaffStore, schoolIdsOf, schoolIdsText } from '../store/index.js';
import { backUp } from './backup.js';
import { CommandError, EXIT } from './command-error.js';
import { PRIVACY_COMMANDS, PRIVACY_HELP } from './privacy.js';
import { restore, verify } from './restore.js';

export { EXIT } from './command-error.js';

const COMMON = `The store is the server's: DATABASE_URL when set, else the SQLite database in DATA_DIR
(default ./data), read from the environment and from a .env file in the working directory.
Safe while the server runs. Each change is in the audit log, as done from the command line.

Exit status: 0 done; 1 failed (usage, input, database, a school id no school has); 2 no such
user; 3 refused (the last enabled admin of every school, a user that exists already).`;

const BACKUPS = `DATA_DIR, DATABASE_URL and CODE_ENCRYPTION_KEY are the server's, read from the environment
and from a .env file in the working directory. Give DIR as an absolute path (pnpm runs the
command from the repository's root). docs/deployment.md#backups-and-restore has the restore drill.`;

const PRIVACY_SETTINGS = `DATA_DIR or DATABASE_URL, CODE_ENCRYPTION_KEY (the keyed hash's key) and DEFAULT_PHONE_REGION
are the server's, read from the environment and from a .env file in the working directory. Put a
number with spaces in quotes: --phone "07400 123456".`;

/** Each command's help, as `--help` prints it ('': the commands); its examples are run by test/admin-examples.test.ts. */
export const HELP: Record<string, string> = {
  '': `Usage: pnpm admin <command> …

Staff accounts from the server's own machine: for an admin who lost their password or second
factor, or a console no one can log in to.

Commands:
  users list                              every user: role, enabled, second factor, last login,
                                          schools
  users create NAME --role ROLE [--schools IDS] --password-stdin
                                          a new user; the password from standard input
  users reset-password NAME --password-stdin
                                          a new password; the user's sessions end
  users reset-2fa NAME                    removes the second factor; the user's sessions end
  users disable NAME                      the user can no longer log in; their sessions end
  users enable NAME
  users set-role NAME admin|operator
  users set-schools NAME IDS|all          limits the user to schools (ids, comma-separated), or not
  sessions revoke NAME                    ends every session of the user
  schools list                            the schools' ids and names, for --schools and set-schools

  backup DIR [--with-key]                 a copy of DATA_DIR (SQLite) taken while the server runs
  verify DIR                              checks a backup's every file against its manifest
  restore DIR                             puts a backup back into an empty DATA_DIR

  privacy-report --phone NUMBER [--csv]   everything held about a parent's phone number
  erase-phone --phone NUMBER              erases the number everywhere it is held
  erase-phone --hash HASH …               erases again, after a restore, numbers erased before

  pnpm admin <command> --help             more on one command

${COMMON}
backup, verify and restore have their own (4: a backup that does not match its manifest).`,
  'users list': `Usage: pnpm admin users list [--json]

Lists every staff user: username, display name, role, enabled, second factor, single sign-on,
last login, and schools: ${ALL_SCHOOLS}, or those the user is limited to, each by name and id
(one deleted since as "school ID (deleted)"). --json: one JSON array, for scripts (schools: null
for all, else [{ id, name }], name null for a school deleted since).

${COMMON}`,
  'users create': `Usage: pnpm admin users create NAME --role admin|operator [--schools IDS|all] [--display-name TEXT] --password-stdin

Adds a staff user who logs in with a password. The password is read from standard input (one
line; typed twice, hidden, at a terminal): at least 10 characters. --schools limits the user to
the schools with those ids, separated by commas (pnpm admin schools list gives them); without
it, or with all, the user sees every school. An admin limited to schools acts as an operator of
them (docs/security.md#who-sees-what).

  echo "$PASSWORD" | pnpm admin users create ana --role admin --password-stdin
  echo "$PASSWORD" | pnpm admin users create reception --role operator --schools 3,5 --password-stdin

${COMMON}`,
  'users reset-password': `Usage: pnpm admin users reset-password NAME --password-stdin

Sets a new password, read from standard input, and ends the user's sessions. Their second factor,
if any, stays: reset it with reset-2fa if it is lost too.

${COMMON}`,
  'users reset-2fa': `Usage: pnpm admin users reset-2fa NAME

Removes the user's second factor and recovery codes and ends their sessions: they log in with the
password alone, then set up a new one (at once, where REQUIRE_TOTP asks it of them).

${COMMON}`,
  'users disable': `Usage: pnpm admin users disable NAME

The user can no longer log in, by password or single sign-on; their sessions end. The last
enabled admin cannot be disabled (exit 3): make another admin first.

${COMMON}`,
  'users enable': `Usage: pnpm admin users enable NAME

Lets a disabled user log in again.

${COMMON}`,
  'users set-role': `Usage: pnpm admin users set-role NAME admin|operator

Changes the user's role; it applies at their next request. The last enabled admin cannot be made
an operator (exit 3). A single sign-on user's role is set again from their groups at each login.

${COMMON}`,
  'users set-schools': `Usage: pnpm admin users set-schools NAME IDS|all

Limits the user to the schools with these ids, separated by commas (pnpm admin schools list gives
them), or, with all, lets them see every school again. It holds from their next request; a live
feed or export they have open ends. An id no school has is refused, naming it. The last enabled
admin of every school cannot be limited (exit 3): make another user one first. A single sign-on
user's schools are set again from their identity provider at each login where OIDC_SCHOOLS_CLAIM
is set.

  pnpm admin users set-schools office 3
  pnpm admin users set-schools office all

${COMMON}`,
  'schools list': `Usage: pnpm admin schools list [--json]

Lists the schools by id, with their names and base URLs: the ids --schools and set-schools take.
Schools are added and changed on the console's Schools page. --json: one JSON array, for scripts.

${COMMON}`,
  'sessions revoke': `Usage: pnpm admin sessions revoke NAME

Ends every console session of the user: they must log in again.

${COMMON}`,
  backup: `Usage: pnpm admin backup DIR [--with-key]

A consistent copy of the embedded store (SQLite in DATA_DIR), taken while the server runs and
takes calls: the database as of the moment the backup begins (every call answered before then
is in it), the books it names (each checked against its SHA-256), and manifest.json: when, which
release and migration, and every file's size and SHA-256. DIR must be new or empty, and outside
DATA_DIR; what is written there is for this user alone (folders 0700, files 0600). The server's
write-ahead log grows while the database is copied and is cut back after.

  --with-key   the code key (DATA_DIR/code-encryption.key) goes in too; keep such a backup as
               safe as the configuration. Without it, keep the key with the configuration:
               auth codes waiting to be sent and staff second factors are sealed with it.

With DATABASE_URL set (PostgreSQL) it does nothing: back up with pg_dump, or pg_basebackup and
WAL archiving (pgBackRest).

${BACKUPS}

Exit status: 0 done; 1 failed; 3 refused (DIR not empty or inside DATA_DIR, DATABASE_URL set).`,
  verify: `Usage: pnpm admin verify DIR

Reads every file of the backup in DIR and checks its size and SHA-256 against manifest.json;
writes nothing. Run it where the backups are kept, e.g. after copying one off the machine.

Exit status: 0 whole; 1 failed; 4 a file missing or altered, or no manifest (each named).`,
  restore: `Usage: pnpm admin restore DIR

Puts the backup in DIR back into DATA_DIR, which must be empty or absent: a restore never writes
over data (stop the server and move the old folder aside first). Every file is checked against
the manifest as it is copied; a backup that does not match is refused whole, naming the files,
and nothing is left in DATA_DIR. Then start the server on DATA_DIR.

A backup taken without --with-key has no code key: put it back before starting the server
(CODE_ENCRYPTION_KEY as it was, or the file code-encryption.key in DATA_DIR); restore says what
is sealed with it.

With DATABASE_URL set (PostgreSQL) it does nothing: restore with pg_restore.

${BACKUPS}

Exit status: 0 done; 1 failed; 3 refused (DATA_DIR holds data, DATABASE_URL set); 4 the backup
does not match its manifest, or is none (the files named).`,
  'privacy-report': `${PRIVACY_HELP['privacy-report']}

${PRIVACY_SETTINGS}

Exit status: 0 done; 1 failed (not a phone number, the database).`,
  'erase-phone': `${PRIVACY_HELP['erase-phone']}

${PRIVACY_SETTINGS}

Exit status: 0 done; 1 failed (not a phone number, the database).`,
};

const usage = (command: string, message: string) =>
  new CommandError(`${message}\n\n${HELP[command] ?? HELP['']}`, EXIT.failed);

export interface Io {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  /** Standard input, whole; null when it is a terminal (a password is then prompted for). */
  readonly readStdin: () => Promise<string | null>;
  /** Asks for a hidden line at the terminal. */
  readonly prompt: (question: string) => Promise<string>;
  readonly env: Record<string, string | undefined>;
}

/** Runs one command line; resolves with the exit status. */
/** What a command that threw tells the operator, and its exit status. */
function failed(err: unknown, io: Io): number {
  if (err instanceof CommandError) {
    io.err(`${err.message}\n`);
    return err.status;
  }
  io.err(`Failed: ${err instanceof Error ? err.message : String(err)}\n`);
  return EXIT.failed;
}

export async function runAdmin(argv: readonly string[], io: Io): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    io.err(`${(err as Error).message}\n`);
    return EXIT.failed;
  }
  if (parsed.help) {
    io.out(`${HELP[parsed.command] ?? HELP['']}\n`);
    return EXIT.done;
  }
  if (Object.hasOwn(BACKUP_COMMANDS, parsed.command))
    return runBackupCommand(parsed, io, BACKUP_COMMANDS[parsed.command] as BackupCommand);
  if (Object.hasOwn(PRIVACY_COMMANDS, parsed.command)) {
    try {
      if (parsed.positionals.length > 0)
        throw usage(parsed.command, `Unexpected: ${parsed.positionals.join(' ')}.`);
      await PRIVACY_COMMANDS[parsed.command as keyof typeof PRIVACY_COMMANDS](parsed.values, io);
      return EXIT.done;
    } catch (err) {
      return failed(err, io);
    }
  }
  let store: StaffStore | undefined;
  try {
    const run = COMMANDS[parsed.command];
    if (!run) throw usage('', parsed.command ? `Unknown command: ${parsed.command}.` : 'Which command?');
    const settings = configSchema
      .pick({ DATA_DIR: true, DATABASE_URL: true, SQLITE_SYNCHRONOUS: true })
      .safeParse(io.env);
    if (!settings.success) {
      const lines = settings.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
      throw new CommandError(`Invalid configuration:\n${lines.join('\n')}`, EXIT.failed);
    }
    const password = parsed.values['password-stdin'] ? await readPassword(io) : undefined;
    store = await openStaffStore({
      dataDir: settings.data.DATA_DIR,
      databaseUrl: settings.data.DATABASE_URL,
      synchronous: settings.data.SQLITE_SYNCHRONOUS,
      owners: [OUTBOX_TABLES],
      waitMs: 10_000,
    });
    await run({ ...parsed, password, store, io });
    return EXIT.done;
  } catch (err) {
    return failed(err, io);
  } finally {
    await store?.close();
  }
}

interface Parsed {
  readonly command: string;
  readonly positionals: readonly string[];
  readonly values: {
    readonly role?: string | undefined;
    readonly schools?: string | undefined;
    readonly 'display-name'?: string | undefined;
    readonly 'password-stdin'?: boolean | undefined;
    readonly json?: boolean | undefined;
    readonly 'with-key'?: boolean | undefined;
    readonly phone?: string | undefined;
    readonly hash?: string[] | undefined;
    readonly csv?: boolean | undefined;
  };
  readonly help: boolean;
}

function parse(argv: readonly string[]): Parsed {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      role: { type: 'string' },
      schools: { type: 'string' },
      'display-name': { type: 'string' },
      'password-stdin': { type: 'boolean' },
      // A password given as an argument is refused by name, not taken.
      password: { type: 'string' },
      json: { type: 'boolean' },
      'with-key': { type: 'boolean' },
      phone: { type: 'string' },
      hash: { type: 'string', multiple: true },
      csv: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [group = '', verb = '', ...rest] = positionals;
  if (values.password !== undefined) {
    throw new Error(
      'A password is never given as an argument (it would be in the shell history and the process list): use --password-stdin.',
    );
  }
  // `backup DIR`, `erase-phone --phone …`: commands of one word.
  if (Object.hasOwn(BACKUP_COMMANDS, group) || Object.hasOwn(PRIVACY_COMMANDS, group))
    return { command: group, positionals: positionals.slice(1), values, help: values.help === true };
  const command = [group, verb].filter(Boolean).join(' ');
  return { command, positionals: rest, values, help: values.help === true || group === 'help' };
}

interface BackupRun {
  /** The backup's folder, absolute. */
  readonly dir: string;
  readonly dataDir: string;
  readonly withKey: boolean;
  readonly keyInConfig: boolean;
  readonly out: (text: string) => void;
}

/** The commands on a backup's folder (backup.ts, restore.ts): no store is opened for them. */
interface BackupCommand {
  /** Refused with DATABASE_URL set: it reads or writes DATA_DIR. */
  readonly sqliteOnly: boolean;
  run(r: BackupRun): Promise<void>;
}

const BACKUP_COMMANDS: Record<string, BackupCommand> = {
  backup: { sqliteOnly: true, run: backUp },
  restore: { sqliteOnly: true, run: restore },
  verify: { sqliteOnly: false, run: verify },
};

async function runBackupCommand(parsed: Parsed, io: Io, command: BackupCommand): Promise<number> {
  try {
    const [dir, ...extra] = parsed.positionals;
    if (!dir || extra.length > 0) throw usage(parsed.command, 'Give one folder: the backup.');
    const settings = configSchema
      .pick({ DATA_DIR: true, DATABASE_URL: true, CODE_ENCRYPTION_KEY: true })
      .safeParse(io.env);
    if (!settings.success) {
      const lines = settings.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
      throw new CommandError(`Invalid configuration:\n${lines.join('\n')}`, EXIT.failed);
    }
    if (command.sqliteOnly && settings.data.DATABASE_URL !== undefined)
      throw new CommandError(
        `DATABASE_URL is set: the data is in PostgreSQL, which ${parsed.command} does not copy. ` +
          (parsed.command === 'backup'
            ? 'Back it up with pg_dump, or pg_basebackup with WAL archiving (pgBackRest)'
            : 'Restore it with pg_restore, or your base backup and archived WAL') +
          ': docs/deployment.md#backups-and-restore. Nothing was done.',
        EXIT.refused,
      );
    await command.run({
      dir: path.resolve(dir),
      dataDir: path.resolve(settings.data.DATA_DIR),
      withKey: parsed.values['with-key'] === true,
      keyInConfig: settings.data.CODE_ENCRYPTION_KEY !== undefined,
      out: io.out,
    });
    return EXIT.done;
  } catch (err) {
    return failed(err, io);
  }
}

interface Run extends Parsed {
  readonly store: StaffStore;
  readonly io: Io;
  readonly password: string | undefined;
}

const COMMANDS: Record<string, (run: Run) => Promise<void>> = {
  async 'users list'({ store, io, values }) {
    const users = await store.users.list();
    const names = await store.schools.namesOf(users.flatMap((u) => schoolIdsOf(u.school_ids) ?? []));
    const described = users.map((u) => describe(u, names));
    if (values.json) {
      io.out(`${JSON.stringify(described, null, 2)}\n`);
      return;
    }
    // The schools last: a long list does not push the other columns apart.
    table(io, [
      ['USERNAME', 'DISPLAY NAME', 'ROLE', 'ENABLED', '2FA', 'SSO', 'LAST LOGIN', 'SCHOOLS'],
      ...described.map((d) => [
        d.username,
        d.displayName,
        d.role,
        d.enabled ? 'yes' : 'no',
        d.secondFactor ? 'yes' : 'no',
        d.sso ? 'yes' : 'no',
        d.lastLoginAt ?? 'never',
        schoolsText(d.schools),
      ]),
    ]);
  },

  async 'users create'(run) {
    const { store, io, values } = run;
    const name = oneName(run);
    const username = usernameSchema.safeParse(name);
    if (!username.success)
      throw new CommandError(`Not a username: ${username.error.issues[0]?.message}`, EXIT.failed);
    const role = roleSchema.safeParse(values.role);
    if (!role.success) throw usage(run.command, 'Give the role: --role admin or --role operator.');
    const schools = await schoolsGiven(run, values.schools ?? 'all');
    const password = needPassword(run);
    if (await store.users.findByUsername(username.data)) {
      throw new CommandError(`There is already a user named ${username.data}.`, EXIT.refused);
    }
    const displayName = (values['display-name'] ?? username.data).trim().slice(0, 100) || username.data;
    const row = await store.users.create({
      username: username.data,
      display_name: displayName,
      role: role.data,
      password_hash: await hashPassword(password),
      school_ids: schoolIdsText(schools.ids),
    });
    await audit(run, {
      action: 'user-create',
      target: targetOf(row),
      details: { displayName, role: row.role, schoolIds: schoolIdsOf(row.school_ids) },
    });
    io.out(
      schools.ids === null
        ? `Created ${row.role} ${row.username}.\n`
        : `Created ${row.role} ${row.username}, limited to ${schoolsText(schools.named)}.\n`,
    );
  },

  async 'users reset-password'(run) {
    const user = await findUser(run);
    if (user.sso_subject) {
      throw new CommandError(
        `${user.username} logs in with single sign-on: their password is kept by the school's identity provider.`,
        EXIT.refused,
      );
    }
    const password = needPassword(run);
    await run.store.users.update(user.id, { password_hash: await hashPassword(password) });
    const ended = await run.store.sessions.removeForUser(user.id);
    await audit(run, {
      action: 'user-update',
      target: targetOf(user),
      details: { password: 'reset', sessionsEnded: ended },
    });
    run.io.out(`New password set for ${user.username}; ${sessionsText(ended)} ended.\n`);
  },

  async 'users reset-2fa'(run) {
    const user = await findUser(run);
    await run.store.users.clearTotp(user.id);
    const ended = await run.store.sessions.removeForUser(user.id);
    await audit(run, {
      action: 'totp-reset',
      target: targetOf(user),
      details: { hadSecondFactor: user.totp_secret !== null, sessionsEnded: ended },
    });
    run.io.out(
      user.totp_secret
        ? `Second factor of ${user.username} removed; ${sessionsText(ended)} ended.\n`
        : `${user.username} had no second factor; ${sessionsText(ended)} ended.\n`,
    );
  },

  async 'users disable'(run) {
    const user = await findUser(run);
    await change(run, user, { disabled: true });
    const ended = await run.store.sessions.removeForUser(user.id);
    await audit(run, {
      action: 'user-update',
      target: targetOf(user),
      details: { disabled: { from: user.disabled === 1, to: true }, sessionsEnded: ended },
    });
    run.io.out(`${user.username} disabled; ${sessionsText(ended)} ended.\n`);
  },

  async 'users enable'(run) {
    const user = await findUser(run);
    await change(run, user, { disabled: false });
    await audit(run, {
      action: 'user-update',
      target: targetOf(user),
      details: { disabled: { from: user.disabled === 1, to: false } },
    });
    run.io.out(`${user.username} enabled.\n`);
  },

  async 'users set-role'(run) {
    const [name, roleText, ...extra] = run.positionals;
    if (!name || extra.length > 0) throw usage(run.command, 'Give one username and a role.');
    const role = roleSchema.safeParse(roleText);
    if (!role.success) throw usage(run.command, 'The role is admin or operator.');
    const user = await findUser({ ...run, positionals: [name] });
    await change(run, user, { role: role.data });
    await audit(run, {
      action: 'user-update',
      target: targetOf(user),
      details: { role: { from: user.role, to: role.data } },
    });
    run.io.out(`${user.username} is now ${role.data === 'admin' ? 'an admin' : 'an operator'}.\n`);
  },

  async 'users set-schools'(run) {
    const [name, idsText, ...extra] = run.positionals;
    if (!name || idsText === undefined || extra.length > 0)
      throw usage(run.command, 'Give one username, and the schools: their ids (3,5) or all.');
    const user = await findUser({ ...run, positionals: [name] });
    const schools = await schoolsGiven(run, idsText);
    const text = schoolIdsText(schools.ids);
    await change(run, user, { school_ids: text });
    await audit(run, {
      action: 'user-update',
      target: targetOf(user),
      details: { schoolIds: { from: schoolIdsOf(user.school_ids), to: schoolIdsOf(text) } },
    });
    run.io.out(
      schools.ids === null
        ? `${user.username} now sees every school.\n`
        : `${user.username} is now limited to ${schoolsText(schools.named)}.\n`,
    );
  },

  async 'schools list'({ store, io, values }) {
    const schools = (await store.schools.list()).map((s) => ({
      id: s.id,
      name: s.name,
      baseUrl: s.base_url,
    }));
    if (values.json) {
      io.out(`${JSON.stringify(schools, null, 2)}\n`);
      return;
    }
    if (schools.length === 0) {
      io.out("No schools yet: they are added on the console's Schools page.\n");
      return;
    }
    table(io, [['ID', 'NAME', 'BASE URL'], ...schools.map((s) => [String(s.id), s.name, s.baseUrl])]);
  },

  async 'sessions revoke'(run) {
    const user = await findUser(run);
    const ended = await run.store.sessions.removeForUser(user.id);
    await audit(run, {
      action: 'sessions-revoke',
      target: targetOf(user),
      details: { sessionsEnded: ended },
    });
    run.io.out(`${sessionsText(ended)} of ${user.username} ended.\n`);
  },
};

/** A school as the command line names it: its id, and its name (null: deleted since). */
interface NamedSchool {
  readonly id: number;
  readonly name: string | null;
}

/** A user as `users list` shows them; `names`: the schools' names by id. */
function describe(u: UserRow, names: ReadonlyMap<number, string>) {
  return {
    username: u.username,
    displayName: u.display_name,
    role: u.role,
    enabled: u.disabled === 0,
    secondFactor: u.totp_secret !== null,
    sso: u.sso_subject !== null,
    lastLoginAt: u.last_login_at === null ? null : new Date(u.last_login_at).toISOString(),
    /** null: every school (organisation-wide); else the schools the user is limited to. */
    schools: named(schoolIdsOf(u.school_ids), names),
  };
}

const named = (ids: readonly number[] | null, names: ReadonlyMap<number, string>): NamedSchool[] | null =>
  ids === null ? null : ids.map((id) => ({ id, name: names.get(id) ?? null }));

/** A user's schools in words: All schools, or each by name and id (as the Users page names them). */
const schoolsText = (schools: readonly NamedSchool[] | null): string =>
  schools === null
    ? ALL_SCHOOLS
    : schools.map((s) => (s.name === null ? `school ${s.id} (deleted)` : `${s.name} (${s.id})`)).join(', ');

/**
 * The schools given on the command line (`--schools`, set-schools): `all` is every school (null);
 * else ids separated by commas, checked as POST and PATCH /api/users check `schoolIds`
 * (routes/api/users.ts): each a school's, refused naming those no school has.
 */
async function schoolsGiven(
  run: Run,
  text: string,
): Promise<{ ids: readonly number[] | null; named: NamedSchool[] | null }> {
  if (text.trim().toLowerCase() === 'all') return { ids: null, named: null };
  const parts = text.split(',').map((part) => part.trim());
  const ids = schoolIdsSchema
    .min(1)
    .safeParse(parts.map((part) => (/^\d+$/.test(part) ? Number(part) : Number.NaN)));
  if (!ids.success)
    throw usage(
      run.command,
      `Give the schools by id, separated by commas (3,5), or all: not ${JSON.stringify(text)}. See: pnpm admin schools list`,
    );
  const names = new Map((await run.store.schools.list()).map((s) => [s.id, s.name]));
  const unknown = [...new Set(ids.data)].filter((id) => !names.has(id));
  if (unknown.length > 0)
    throw new CommandError(
      `${
        unknown.length === 1
          ? `There is no school with the id ${unknown[0]}.`
          : `There are no schools with the ids ${unknown.join(', ')}.`
      } See: pnpm admin schools list`,
      EXIT.failed,
    );
  const sorted = [...new Set(ids.data)].sort((a, b) => a - b);
  return { ids: sorted, named: named(sorted, names) };
}

/** Rows in columns two spaces apart, the first row the header. */
function table(io: Io, rows: readonly (readonly string[])[]): void {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  for (const row of rows)
    io.out(
      `${row
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd()}\n`,
    );
}

function oneName(run: Run): string {
  const [name, ...extra] = run.positionals;
  if (!name || extra.length > 0) throw usage(run.command, 'Give one username.');
  return name;
}

async function findUser(run: Run): Promise<UserRow> {
  const name = oneName(run).trim().toLowerCase();
  const user = await run.store.users.findByUsername(name);
  if (!user)
    throw new CommandError(`There is no user named ${name}. See: pnpm admin users list`, EXIT.unknownUser);
  return user;
}

/** A change of role, enabled state or schools, under the last-admin rule. */
async function change(
  run: Run,
  user: UserRow,
  changes: { role?: Role; disabled?: boolean; school_ids?: string | null },
): Promise<void> {
  const result = await run.store.users.update(user.id, changes);
  if (result === 'last-admin') {
    throw new CommandError(
      `${user.username} is the last enabled admin of every school: make another user an admin of every school first (pnpm admin users set-role NAME admin; set-schools NAME all).`,
      EXIT.refused,
    );
  }
  if (result === undefined)
    throw new CommandError(`There is no user named ${user.username}.`, EXIT.unknownUser);
}

function needPassword(run: Run): string {
  if (run.password === undefined)
    throw usage(run.command, 'The password is read from standard input: add --password-stdin.');
  const checked = passwordSchema.safeParse(run.password);
  if (!checked.success)
    throw new CommandError(`Not a usable password: ${checked.error.issues[0]?.message}`, EXIT.failed);
  return checked.data;
}

/** The password: standard input's first line, or typed twice at a terminal. */
async function readPassword(io: Io): Promise<string> {
  const piped = await io.readStdin();
  if (piped !== null) {
    const line = piped.split(/\r?\n/)[0] ?? '';
    if (!line) throw new CommandError('Standard input held no password.', EXIT.failed);
    return line;
  }
  const first = await io.prompt('New password: ');
  const again = await io.prompt('The same again: ');
  if (first !== again) throw new CommandError('The two passwords differ.', EXIT.failed);
  return first;
}

function audit(run: Run, entry: Omit<NewAuditEntry, 'userId' | 'username' | 'ip'>): Promise<void> {
  let who = 'unknown';
  try {
    who = os.userInfo().username;
  } catch {
    // No user name for this uid (a container): "unknown".
  }
  return run.store.audit.add({
    ...entry,
    userId: null,
    username: `cli:${who}`.slice(0, 64),
    ip: 'command line',
    details: { ...entry.details, by: 'command line' },
  });
}

const targetOf = (u: UserRow) => `user ${u.id} (${u.username})`;
const sessionsText = (n: number) => (n === 1 ? '1 session' : `${n} sessions`);

/** The process: real standard streams, .env in the working directory. */
async function main(): Promise<void> {
  createFilesPrivately();
  if (fs.existsSync('.env')) process.loadEnvFile('.env');
  // Should the process end before the command has said how it went, it did not go well.
  process.exitCode = EXIT.failed;
  const status = await runAdmin(process.argv.slice(2), {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
    env: process.env,
    async readStdin() {
      if (process.stdin.isTTY) return null;
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    },
    prompt: hiddenPrompt,
  });
  process.exitCode = status;
}

/** A line typed at the terminal without echo. */
function hiddenPrompt(question: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const stdin = process.stdin;
    process.stderr.write(question);
    stdin.setRawMode(true);
    stdin.resume();
    let line = '';
    const onData = (data: Buffer) => {
      for (const char of data.toString('utf8')) {
        if (char === '\r' || char === '\n') {
          finish();
          resolve(line);
          return;
        }
        if (char === '\u0003') {
          finish();
          reject(new CommandError('Cancelled.', EXIT.failed));
          return;
        }
        if (char === '\u007f') line = line.slice(0, -1);
        else line += char;
      }
    };
    const finish = () => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write('\n');
    };
    stdin.on('data', onData);
  });
}

// Run as the bundled dist/admin.js; imported (by tests), it only exports.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) void main();
