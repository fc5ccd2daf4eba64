/**
 * Every example of `pnpm admin` printed for an operator — in the command's help texts and in the
 * shell blocks of README.md and docs/*.md — run as printed (its quotes, its `echo … |`, its `<`
 * and `>`), by the built command, against a running server's store: each does what it says. An
 * example added or changed there fails here until it is run below.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { PrivacyReport } from '@school/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HELP } from '../src/cli/admin.js';
import { type AdminResult, runAdmin } from './admin-process.js';
import { CONSOLE_HEADERS, startTestApp, type TestApp } from './helpers.js';

const ROOT = path.join(import.meta.dirname, '../../..');

/** What `$PASSWORD` stands for in an example. */
const PASSWORD = 'a password from the vault';
/** What the files an example reads hold. */
const FILES: Record<string, string> = { 'new-password.txt': 'head password 2026\n' };

/** The examples in the help texts: lines that run the command, not a synopsis of it. */
function helpExamples(): string[] {
  return Object.values(HELP)
    .flatMap((text) => text.split('\n'))
    .map((line) => line.trim())
    .filter((line) => /^(echo .* \| )?pnpm admin /.test(line))
    .filter((line) => !/\b[A-Z]{2,}\b|[<[]|\w\|\w/.test(line.replace(/^echo "\$PASSWORD" \| /, '')));
}

/** The `pnpm admin` lines of the docs' shell blocks, without their comments. */
function docExamples(): string[] {
  const files = [
    path.join(ROOT, 'README.md'),
    ...fs.readdirSync(path.join(ROOT, 'docs')).map((f) => path.join(ROOT, 'docs', f)),
  ].filter((f) => f.endsWith('.md'));
  return files.flatMap((file) =>
    [...fs.readFileSync(file, 'utf8').matchAll(/^```(?:sh|bash|shell)\n([\s\S]*?)^```/gm)]
      .flatMap((block) => (block[1] ?? '').split('\n'))
      .map((line) => withoutComment(line).trim())
      .filter((line) => /^(echo .* \| )?pnpm admin /.test(line)),
  );
}

/** A line without its `# comment` (a # outside quotes, after a space). */
function withoutComment(line: string): string {
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    if (line[i] === '"') quoted = !quoted;
    else if (line[i] === '#' && !quoted && (i === 0 || /\s/.test(line[i - 1] ?? ''))) return line.slice(0, i);
  }
  return line;
}

/** An example as the shell runs it: the command's arguments, its standard input, where its output goes. */
function asShellRuns(line: string): { args: string[]; stdin: string; stdoutFile?: string } {
  const words: string[] = [];
  for (const match of line.matchAll(/"([^"]*)"|(\S+)/g)) words.push(match[1] ?? match[2] ?? '');
  let stdin = '';
  const pipe = words.indexOf('|');
  if (pipe >= 0) {
    expect(words.slice(0, pipe)).toEqual(['echo', '$PASSWORD']);
    stdin = `${PASSWORD}\n`;
    words.splice(0, pipe + 1);
  }
  const from = words.indexOf('<');
  if (from >= 0) {
    const file = words[from + 1] as string;
    expect(FILES, file).toHaveProperty([file]);
    stdin = FILES[file] as string;
    words.splice(from, 2);
  }
  const to = words.indexOf('>');
  const stdoutFile = to >= 0 ? words[to + 1] : undefined;
  if (to >= 0) words.splice(to, 2);
  expect(words.slice(0, 2)).toEqual(['pnpm', 'admin']);
  return { args: words.slice(2), stdin, ...(stdoutFile ? { stdoutFile } : {}) };
}

describe('the examples of pnpm admin, as printed', () => {
  let t: TestApp;
  let env: Record<string, string>;
  /** Each example's outcome: its exit status and output, and what it wrote to a file. */
  const ran = async (line: string): Promise<AdminResult & { written: string | undefined }> => {
    const { args, stdin, stdoutFile } = asShellRuns(line);
    const result = await runAdmin(args, env, stdin);
    return { ...result, written: stdoutFile === undefined ? undefined : result.stdout };
  };
  const logIn = async (username: string, password: string) =>
    t.app.inject({
      method: 'POST',
      url: '/api/session',
      headers: CONSOLE_HEADERS,
      payload: { username, password },
    });
  const cookieOf = async (username: string, password: string) =>
    `session=${(await logIn(username, password)).cookies.find((c) => c.name === 'session')?.value}`;
  const sessionOf = async (cookie: string) =>
    t.app.inject({ method: 'GET', url: '/api/session', headers: { ...CONSOLE_HEADERS, cookie } });
  const user = (name: string) => t.app.store.users.findByUsername(name);

  beforeAll(async () => {
    t = await startTestApp({ DEFAULT_PHONE_REGION: 'GB' });
    env = { DATA_DIR: t.dataDir, DEFAULT_PHONE_REGION: 'GB' };
    // Two members of staff the examples name, the head with a second factor; five schools, so
    // that the examples' ids 3 and 5 are schools; a parent's code.
    for (const [username, password] of [
      ['head', 'head password 2025'],
      ['former-head', 'former head password'],
    ] as const) {
      const made = await t.inject({
        method: 'POST',
        url: '/api/users',
        payload: { username, displayName: username, password, role: 'operator' },
      });
      expect(made.statusCode, made.body).toBe(201);
    }
    await t.app.store.db
      .updateTable('users')
      .set({ totp_secret: 'sealed' })
      .where('username', '=', 'head')
      .execute();
    const names = ['Abbey Road', 'Bridge Street', 'Northfield Primary', 'Oakwood', 'Southgate Academy'];
    for (const [i, name] of names.entries()) {
      const school = await t.inject({
        method: 'POST',
        url: '/api/schools',
        payload: { name, baseUrl: `https://school-${i + 1}.example.org`, topicKey: `school-${i + 1}` },
      });
      expect(school.json().id).toBe(i + 1);
    }
    const code = await t.app.inject({
      method: 'GET',
      url: '/AuthCodeSending.asmx/AuthCode?code=4821&phone=07458913276',
    });
    expect(code.statusCode).toBe(200);
  });
  afterAll(() => t?.close());

  /** What each example must do, in the order they are run (each may rely on those before). */
  const EXAMPLES: Record<string, () => Promise<void>> = {
    'pnpm admin help': async () => {
      const r = await ran('pnpm admin help');
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(/^Usage: pnpm admin <command>/);
      expect(r.stdout).toContain('users set-schools NAME IDS|all');
    },
    'pnpm admin users list': async () => {
      const r = await ran('pnpm admin users list');
      expect(r.status).toBe(0);
      const lines = r.stdout
        .trimEnd()
        .split('\n')
        .map((l) => l.split(/\s{2,}/));
      expect(lines[0]?.at(-1)).toBe('SCHOOLS');
      expect(lines.find((l) => l[0] === 'head')).toEqual([
        'head',
        'head',
        'operator',
        'yes',
        'yes',
        'no',
        'never',
        'All schools',
      ]);
    },
    'pnpm admin users reset-2fa head': async () => {
      const r = await ran('pnpm admin users reset-2fa head');
      expect(r).toMatchObject({ status: 0, stdout: 'Second factor of head removed; 0 sessions ended.\n' });
      expect((await user('head'))?.totp_secret).toBeNull();
    },
    'pnpm admin users reset-password head --password-stdin < new-password.txt': async () => {
      const cookie = await cookieOf('head', 'head password 2025');
      const r = await ran('pnpm admin users reset-password head --password-stdin < new-password.txt');
      expect(r).toMatchObject({ status: 0, stdout: 'New password set for head; 1 session ended.\n' });
      expect((await sessionOf(cookie)).statusCode).toBe(401);
      expect((await logIn('head', 'head password 2025')).statusCode).toBe(401);
      expect((await logIn('head', 'head password 2026')).statusCode).toBe(200);
    },
    'pnpm admin users create deputy --role admin --display-name "Deputy Head" --password-stdin': async () => {
      // Typed at a terminal in the docs; here from standard input, as the command reads it.
      const { args } = asShellRuns(
        'pnpm admin users create deputy --role admin --display-name "Deputy Head" --password-stdin',
      );
      const r = await runAdmin(args, env, 'deputy password 1\n');
      expect(r).toMatchObject({ status: 0, stdout: 'Created admin deputy.\n' });
      expect(await user('deputy')).toMatchObject({
        display_name: 'Deputy Head',
        role: 'admin',
        school_ids: null,
      });
      expect((await logIn('deputy', 'deputy password 1')).statusCode).toBe(200);
    },
    'pnpm admin users set-role head admin': async () => {
      const r = await ran('pnpm admin users set-role head admin');
      expect(r).toMatchObject({ status: 0, stdout: 'head is now an admin.\n' });
      expect((await user('head'))?.role).toBe('admin');
    },
    'pnpm admin users disable former-head': async () => {
      const cookie = await cookieOf('former-head', 'former head password');
      const r = await ran('pnpm admin users disable former-head');
      expect(r).toMatchObject({ status: 0, stdout: 'former-head disabled; 1 session ended.\n' });
      expect((await sessionOf(cookie)).statusCode).toBe(401);
      expect((await logIn('former-head', 'former head password')).statusCode).toBe(401);
    },
    'pnpm admin sessions revoke head': async () => {
      const cookies = [
        await cookieOf('head', 'head password 2026'),
        await cookieOf('head', 'head password 2026'),
      ];
      const r = await ran('pnpm admin sessions revoke head');
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(/^\d+ sessions of head ended\.\n$/);
      for (const cookie of cookies) expect((await sessionOf(cookie)).statusCode).toBe(401);
    },
    'pnpm admin schools list': async () => {
      const r = await ran('pnpm admin schools list');
      expect(r.status).toBe(0);
      const lines = r.stdout
        .trimEnd()
        .split('\n')
        .map((l) => l.split(/\s{2,}/));
      expect(lines[0]).toEqual(['ID', 'NAME', 'BASE URL']);
      expect(lines).toContainEqual(['3', 'Northfield Primary', 'https://school-3.example.org']);
      expect(lines).toContainEqual(['5', 'Southgate Academy', 'https://school-5.example.org']);
    },
    'pnpm admin users create office --role operator --schools 3,5 --password-stdin': async () => {
      const { args } = asShellRuns(
        'pnpm admin users create office --role operator --schools 3,5 --password-stdin',
      );
      const r = await runAdmin(args, env, 'office password 1\n');
      expect(r).toMatchObject({
        status: 0,
        stdout: 'Created operator office, limited to Northfield Primary (3), Southgate Academy (5).\n',
      });
      const session = await sessionOf(await cookieOf('office', 'office password 1'));
      expect(session.json().user.schoolIds).toEqual([3, 5]);
    },
    'echo "$PASSWORD" | pnpm admin users create ana --role admin --password-stdin': async () => {
      const r = await ran('echo "$PASSWORD" | pnpm admin users create ana --role admin --password-stdin');
      expect(r).toMatchObject({ status: 0, stdout: 'Created admin ana.\n' });
      const session = await sessionOf(await cookieOf('ana', PASSWORD));
      expect(session.json().user).toMatchObject({ role: 'admin', schoolIds: null });
    },
    'echo "$PASSWORD" | pnpm admin users create reception --role operator --schools 3,5 --password-stdin':
      async () => {
        const r = await ran(
          'echo "$PASSWORD" | pnpm admin users create reception --role operator --schools 3,5 --password-stdin',
        );
        expect(r.status).toBe(0);
        const session = await sessionOf(await cookieOf('reception', PASSWORD));
        expect(session.json().user).toMatchObject({ role: 'operator', schoolIds: [3, 5] });
      },
    'pnpm admin users set-schools office 3': async () => {
      const cookie = await cookieOf('office', 'office password 1');
      const r = await ran('pnpm admin users set-schools office 3');
      expect(r).toMatchObject({ status: 0, stdout: 'office is now limited to Northfield Primary (3).\n' });
      // From their next request, the session they have.
      expect((await sessionOf(cookie)).json().user.schoolIds).toEqual([3]);
    },
    'pnpm admin users set-schools office all': async () => {
      const cookie = await cookieOf('office', 'office password 1');
      const r = await ran('pnpm admin users set-schools office all');
      expect(r).toMatchObject({ status: 0, stdout: 'office now sees every school.\n' });
      expect((await sessionOf(cookie)).json().user.schoolIds).toBeNull();
    },
    'pnpm admin privacy-report --phone "07458 913276" > report.json': async () => {
      const r = await ran('pnpm admin privacy-report --phone "07458 913276" > report.json');
      expect(r.status).toBe(0);
      const report = JSON.parse(r.written ?? '') as PrivacyReport;
      expect(report.phone).toBe('+447458913276');
      expect(report.calls.map((c) => c.params?.phone)).toEqual(['+447458913276']);
    },
    'pnpm admin erase-phone --phone "+44 7458 913276"': async () => {
      const r = await ran('pnpm admin erase-phone --phone "+44 7458 913276"');
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(/^Erased in [\d.]+ ms: 1 calls, 1 deliveries/);
      expect(r.stdout).toMatch(/Audited as keyed hash [0-9a-f]{64}\.\n$/);
      const report = await t.inject({ method: 'GET', url: '/api/privacy/report?phone=07458913276' });
      expect((report.json() as PrivacyReport).calls).toEqual([]);
    },
  };

  it('has a run below for every example printed, and none for an example no longer printed', () => {
    const printed = [...new Set([...helpExamples(), ...docExamples()])].sort();
    expect(printed.length).toBeGreaterThan(10);
    expect(Object.keys(EXAMPLES).sort()).toEqual(printed);
  });

  for (const [line, check] of Object.entries(EXAMPLES)) it(line, check, 30_000);
});
