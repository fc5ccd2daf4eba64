import type { Role } from '@school/contract';
import { type Kysely, type Selectable, sql } from 'kysely';
import type { Database, UsersTable } from './schema.js';
import type { UnitOfWork } from './unit-of-work.js';

export type UserRow = Selectable<UsersTable>;

export interface UserChanges {
  readonly display_name?: string | undefined;
  readonly role?: Role | undefined;
  readonly disabled?: boolean | undefined;
  readonly password_hash?: string | undefined;
  /** The schools' column (schoolIdsText): null makes the user organisation-wide. */
  readonly school_ids?: string | null | undefined;
}

/**
 * A user's schools as their column holds them: null (organisation-wide, every school) or the
 * ids of the schools they are limited to, never an empty list.
 */
export function schoolIdsOf(text: string | null): readonly number[] | null {
  if (text === null) return null;
  const parsed: unknown = JSON.parse(text);
  if (!Array.isArray(parsed)) return null;
  const ids = parsed.filter((id): id is number => Number.isSafeInteger(id));
  return ids.length === 0 ? null : ids;
}

/** The column's text for a user's schools: null or an empty list is organisation-wide (null). */
export const schoolIdsText = (ids: readonly number[] | null | undefined): string | null =>
  ids && ids.length > 0 ? JSON.stringify([...new Set(ids)].sort((a, b) => a - b)) : null;

/** The password of a user made by single sign-on: no password checks out against it (auth/password.ts). */
export const NO_PASSWORD = '!';

/**
 * Staff accounts. Usernames are stored lower case. Their accounts, those single sign-on makes, and
 * their second factors, each a part of its own.
 */
export function createUserRepository(db: Kysely<Database>, work: UnitOfWork) {
  return { ...accounts(db, work), ...ssoAccounts(db), ...secondFactors(db) };
}

export type UserRepository = ReturnType<typeof createUserRepository>;

/** Counting, listing and finding users; making them, and changing them under the last-admin rule. */
function accounts(db: Kysely<Database>, work: UnitOfWork) {
  return {
    async count(): Promise<number> {
      const row = await db
        .selectFrom('users')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
    list: () => db.selectFrom('users').selectAll().orderBy('username').execute(),
    findById: (id: number) => db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst(),
    findByUsername: (username: string) =>
      db.selectFrom('users').selectAll().where('username', '=', username.toLowerCase()).executeTakeFirst(),
    async create(user: {
      username: string;
      display_name: string;
      role: Role;
      password_hash: string;
      school_ids?: string | null;
    }): Promise<UserRow> {
      const now = Date.now();
      return db
        .insertInto('users')
        .values({
          ...user,
          username: user.username.toLowerCase(),
          disabled: 0,
          created_at: now,
          updated_at: now,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
    },
    /**
     * Creates the first user only if there is none, in one statement: two set-up requests racing
     * cannot both win. Undefined when a user already exists.
     */
    async createFirst(user: {
      username: string;
      display_name: string;
      role: Role;
      password_hash: string;
    }): Promise<UserRow | undefined> {
      const now = Date.now();
      // The lock: under PostgreSQL's READ COMMITTED two such inserts would both see no user.
      const result = await work.locked(['users'], (trx) =>
        sql`INSERT INTO users (username, display_name, role, password_hash, disabled, created_at, updated_at)
        SELECT ${user.username.toLowerCase()}, ${user.display_name}, ${user.role}, ${user.password_hash}, 0, ${now}, ${now}
        WHERE NOT EXISTS (SELECT 1 FROM users)`.execute(trx),
      );
      if (Number(result.numAffectedRows ?? 0) === 0) return undefined;
      return this.findByUsername(user.username);
    },
    /**
     * Applies changes in one statement that refuses to leave no enabled organisation-wide admin
     * (one not limited to schools): the check and the change cannot be interleaved by another
     * request. `last-admin` when it would; undefined when there is no such user.
     */
    async update(id: number, changes: UserChanges): Promise<UserRow | 'last-admin' | undefined> {
      const set = {
        ...(changes.display_name !== undefined ? { display_name: changes.display_name } : {}),
        ...(changes.role !== undefined ? { role: changes.role } : {}),
        ...(changes.disabled !== undefined ? { disabled: changes.disabled ? 1 : 0 } : {}),
        ...(changes.password_hash !== undefined ? { password_hash: changes.password_hash } : {}),
        ...(changes.school_ids !== undefined ? { school_ids: changes.school_ids } : {}),
        updated_at: Date.now(),
      };
      const demotes =
        changes.role === 'operator' ||
        changes.disabled === true ||
        (changes.school_ids !== undefined && changes.school_ids !== null);
      // The lock: under PostgreSQL's READ COMMITTED, two admins demoting each other at once would
      // each still see the other enabled; holding it, the second sees the first's change.
      const row = await work.locked(demotes ? ['users'] : [], (trx) => {
        let query = trx.updateTable('users').set(set).where('id', '=', id);
        if (demotes) {
          query = query.where((eb) =>
            eb.or([
              eb('role', '!=', 'admin'),
              eb('disabled', '=', 1),
              eb('school_ids', 'is not', null),
              eb.exists(
                eb
                  .selectFrom('users as other')
                  .select('other.id')
                  .where('other.role', '=', 'admin')
                  .where('other.disabled', '=', 0)
                  .where('other.school_ids', 'is', null)
                  .where('other.id', '!=', id),
              ),
            ]),
          );
        }
        return query.returningAll().executeTakeFirst();
      });
      if (row) return row;
      return (await this.findById(id)) ? 'last-admin' : undefined;
    },
    async touchLogin(id: number, at: number): Promise<void> {
      await db.updateTable('users').set({ last_login_at: at }).where('id', '=', id).execute();
    },
  };
}

/** Users of the school's identity provider (auth/oidc.ts): found by subject, made, kept up to date. */
function ssoAccounts(db: Kysely<Database>) {
  return {
    findBySsoSubject: (subject: string) =>
      db.selectFrom('users').selectAll().where('sso_subject', '=', subject).executeTakeFirst(),
    /** A user of the school's identity provider, made at their first login. */
    async createSso(user: {
      username: string;
      display_name: string;
      role: Role;
      sso_subject: string;
      school_ids?: string | null;
    }) {
      const now = Date.now();
      return db
        .insertInto('users')
        .values({
          ...user,
          username: user.username.toLowerCase(),
          password_hash: NO_PASSWORD,
          disabled: 0,
          created_at: now,
          updated_at: now,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
    },
    /**
     * A single sign-on user's role, display name and (OIDC_SCHOOLS_CLAIM) schools as their identity
     * provider gives them at a login: the provider decides, so the last-admin rule does not hold
     * here (docs/security.md).
     */
    async setSsoProfile(
      id: number,
      profile: { display_name: string; role: Role; school_ids?: string | null },
    ): Promise<void> {
      await db
        .updateTable('users')
        .set({ ...profile, updated_at: Date.now() })
        .where('id', '=', id)
        .execute();
    },
  };
}

/** A user's second factor (auth/second-factor.ts): set up, proved, removed; each code taken once. */
function secondFactors(db: Kysely<Database>) {
  return {
    /** Starts setting up a second factor: `sealed` waits for a code from it. */
    async setTotpPending(id: number, sealed: string): Promise<void> {
      await db
        .updateTable('users')
        .set({ totp_pending: sealed, updated_at: Date.now() })
        .where('id', '=', id)
        .execute();
    },
    /**
     * The pending secret becomes the second factor, with the recovery codes' hashes, and `step` the
     * last accepted (the code that proved it). False when nothing was pending any more.
     */
    async activateTotp(id: number, pending: string, step: number, recoveryHashes: readonly string[]) {
      const result = await db
        .updateTable('users')
        .set({
          totp_secret: pending,
          totp_pending: null,
          totp_last_step: step,
          recovery_codes: JSON.stringify(recoveryHashes),
          updated_at: Date.now(),
        })
        .where('id', '=', id)
        .where('totp_pending', '=', pending)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },
    /** Removes the second factor and its recovery codes. */
    async clearTotp(id: number): Promise<boolean> {
      const result = await db
        .updateTable('users')
        .set({
          totp_secret: null,
          totp_pending: null,
          totp_last_step: null,
          recovery_codes: null,
          updated_at: Date.now(),
        })
        .where('id', '=', id)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },
    /**
     * Takes the code of time step `step`: true only if no code of this step or a later one was
     * taken before (one statement: two logins racing with one code cannot both pass).
     */
    async takeTotpStep(id: number, step: number): Promise<boolean> {
      const result = await db
        .updateTable('users')
        .set({ totp_last_step: step })
        .where('id', '=', id)
        .where((eb) => eb.or([eb('totp_last_step', 'is', null), eb('totp_last_step', '<', step)]))
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },
    /** Uses up the recovery code hashing to `hash`: true only the first time (compare and set). */
    async takeRecoveryCode(id: number, hash: string): Promise<boolean> {
      const row = await db
        .selectFrom('users')
        .select('recovery_codes')
        .where('id', '=', id)
        .executeTakeFirst();
      if (!row?.recovery_codes) return false;
      const hashes = JSON.parse(row.recovery_codes) as string[];
      if (!hashes.includes(hash)) return false;
      const result = await db
        .updateTable('users')
        .set({ recovery_codes: JSON.stringify(hashes.filter((h) => h !== hash)) })
        .where('id', '=', id)
        .where('recovery_codes', '=', row.recovery_codes)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },
  };
}
