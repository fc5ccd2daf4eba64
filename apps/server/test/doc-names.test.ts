/**
 * The docs name files, folders and functions that exist. A doc that names `store/users.ts` after
 * the file moved sends its reader to nothing; this test fails at that line instead.
 *
 * Which docs: README.md, docs/*.md, apps/*\/README.md, packages/*\/README.md.
 *
 * What is checked, in backticks outside code blocks (and nothing else, to keep it free of false
 * alarms):
 * - a path: a name ending with `/` (a folder) or with a source file's extension (`.ts`, `.mjs`,
 *   `.json`, `.md`, …), or a name with a `/` whose first part is one of the repository's top
 *   folders (`apps/`, `packages/`, `src/`, `test/`, …). It must exist under at least one of
 *   ROOTS; a bare file name (`answers.ts`, no `/`) must be some file's name in the repository.
 * - a function written as a call, `name()`: some source file under apps/, packages/ or e2e/
 *   declares it (a function, a const, a class, a method or a property holding a function), unless
 *   it is one of NOT_OURS.
 * - a camelCase name without the parentheses, `deleteForCalls`, `onTheirWaySince` (a lower-case
 *   start and a capital inside): the word is in some source file under apps/, packages/ or e2e/
 *   (a function, a field or an option alike), unless it is one of NOT_OURS.
 * - a link to a file of the repository, `[text](../apps/server/src/outbox/lanes.ts)`: the file is
 *   there, relative to the doc (the `#heading` after it is not checked).
 *
 * Not names of ours, so not checked: URLs and routes (`/healthz`, `/api/...`: a name that begins
 * with `/`, or holds `://`), MIME types (`text/xml`), placeholders and globs (`<name>`, `*`, `{…}`,
 * `…`), anything with a space (commands such as `pnpm …`, SQL, headers), environment variables
 * (`DATA_DIR/books`: no known first folder), build output (`dist/`), methods of an object
 * (`app.inject()`) and snake_case calls (SQL's `pg_is_in_recovery()`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const REPO = path.resolve(import.meta.dirname, '../../..');
const THIS_FILE = 'apps/server/test/doc-names.test.ts';

/** Where a path in a doc may start from; a path is right if it exists under at least one. */
const ROOTS = [
  '',
  'apps/server/src',
  'apps/server',
  'apps/console/src',
  'apps/console',
  ...subfolders('packages').flatMap((p) => [`packages/${p}/src`, `packages/${p}`]),
  'e2e',
  // `asmx/`, `api/` where the text is about routes/; a feature's `api/prefetch.ts`.
  'apps/server/src/routes',
  ...subfolders('apps/console/src/features').map((f) => `apps/console/src/features/${f}`),
];

const ROOTS_SHOWN =
  'the repository, apps/server, apps/console, packages/*, their src/, e2e/, src/routes/, a console feature';

/** A path's first part that makes it a path even without an extension (`packages/asmx`, `src/lib`). */
const TOP_FOLDERS = new Set(['apps', 'packages', 'e2e', 'docs', 'src', 'test', 'bench']);

/** The extensions that make a name a file's name (`.asmx` is a URL's, `.key` a secret's). */
const FILE_EXTENSIONS = /\.(?:ts|tsx|mts|mjs|cjs|js|json|md|css|html|sql|ya?ml)$/;

/** Names the docs write that are another library's, the runtime's or the wire's, with whose. */
const NOT_OURS: Record<string, string> = {
  maxRequestLength: "ASP.NET's web.config",
  noRestrictedImports: "Biome's rule",
  pushNotiResponse: "the wire's element, written as the operation's name + 'Response'",
  isValid: "libphonenumber-js's",
  randomUUID: "node:crypto's",
  read: "a stream's read",
  translate: "PostgreSQL's",
  import: "JavaScript's dynamic import",
  inject: "Fastify's inject, as tests use it",
};

/** Files the server writes that docs name but the repository has none of, with what they are. */
const WRITTEN_BY_THE_SERVER: Record<string, string> = {
  'manifest.json': "a backup's list of its files (cli/backup-manifest.ts)",
};

interface Mention {
  line: number;
  name: string;
  kind: 'path' | 'function' | 'identifier' | 'link';
}

/** The file, folder and function names a doc's text mentions, by line (1-based). */
function mentionsIn(text: string): Mention[] {
  const found: Mention[] = [];
  let inFence = false;
  text.split('\n').forEach((content, i) => {
    if (/^\s*(?:```|~~~)/.test(content)) {
      inFence = !inFence;
      return;
    }
    if (inFence) return;
    for (const [, target] of content.matchAll(/\]\(([^)\s]+)\)/g)) {
      const file = target?.split('#')[0] ?? '';
      if (file && !/^[a-z]+:/i.test(file)) found.push({ line: i + 1, name: file, kind: 'link' });
    }
    for (const [, code] of content.replaceAll(/\]\([^)]*\)/g, ']').matchAll(/`([^`]+)`/g)) {
      const name = code?.trim() ?? '';
      if (isFunctionName(name)) found.push({ line: i + 1, name, kind: 'function' });
      else if (/^[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*$/.test(name))
        found.push({ line: i + 1, name, kind: 'identifier' });
      else if (isPath(name)) found.push({ line: i + 1, name, kind: 'path' });
    }
  });
  return found;
}

/** `createOutboxSql()`: a plain camelCase name written as a call with nothing in the parentheses. */
function isFunctionName(name: string): boolean {
  return /^[a-zA-Z][a-zA-Z0-9]*\(\)$/.test(name);
}

function isPath(name: string): boolean {
  if (/[\s:?=<>*{}…,;()'"@#$%&|\\[\]]/.test(name)) return false;
  if (name.startsWith('/') || name.startsWith('.')) return false;
  const parts = name.split('/').filter(Boolean);
  if (parts.length === 0 || parts.some((p) => p === 'dist' || p === 'node_modules' || p === '..'))
    return false;
  if (name.endsWith('/') || FILE_EXTENSIONS.test(name)) return true;
  return parts.length > 1 && TOP_FOLDERS.has(parts[0] ?? '');
}

/** Folders that are no part of the repository: .gitignore's, and dot folders (.git, a bench's copy). */
const IGNORED_FOLDERS = new Set(['node_modules', 'dist', 'data', 'test-results', 'coverage']);

/** The repository's files and folders, relative to it. */
function repoEntries(): { files: Set<string>; baseNames: Set<string> } {
  const files = new Set<string>();
  const baseNames = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(path.join(REPO, dir), { withFileTypes: true })) {
      const relative = dir ? `${dir}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (!IGNORED_FOLDERS.has(entry.name) && !entry.name.startsWith('.')) walk(relative);
      } else {
        files.add(relative);
        baseNames.add(entry.name);
      }
    }
  };
  walk('');
  return { files, baseNames };
}

function subfolders(dir: string): string[] {
  return fs
    .readdirSync(path.join(REPO, dir), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name);
}

/** Every name a source file declares: functions, consts, classes, methods, function properties. */
function declaredNames(sources: string[]): Set<string> {
  const names = new Set<string>();
  const declarations = [
    // function f, const f, let f, class F, export { g as f }
    /\b(?:function\*?|const|let|var|class)\s+([A-Za-z_$][\w$]*)/g,
    /\bas\s+([A-Za-z_$][\w$]*)\s*[,}]/g,
    // a method, in a class, an object or an interface: `async stop() {`, `committed(): void;`
    /^[ \t]*(?:(?:async|static|public|private|protected|readonly|get|set|override)\s+)*([A-Za-z_$][\w$]*)\s*(?:<[^>\n]*>)?\s*\([^)\n]*\)\s*(?::|\{)/gm,
    // a property holding a function: `committed?: (id: number) => …`, `start: async () => …`
    /^[ \t]*(?:readonly\s+)?([A-Za-z_$][\w$]*)\??\s*:\s*(?:async\s*)?(?:\(|<|function\b)/gm,
  ];
  for (const text of sources) {
    for (const pattern of declarations) for (const [, name] of text.matchAll(pattern)) names.add(name ?? '');
  }
  return names;
}

interface Repo {
  exists: (relative: string) => boolean;
  isFile: (baseName: string) => boolean;
  declares: (name: string) => boolean;
  mentions: (word: string) => boolean;
}

/** What is wrong with a doc's names: `docs/x.md:12 names \`store/users.ts\`, …`, one per name. */
function missingNames(doc: string, text: string, repo: Repo): string[] {
  const problems: string[] = [];
  for (const { line, name, kind } of mentionsIn(text)) {
    const where = `${doc}:${line} names \`${name}\``;
    if (kind === 'link') {
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(doc), name));
      if (!repo.exists(target))
        problems.push(`${doc}:${line} links to ${name}, which is not there (${target})`);
    } else if (kind === 'identifier') {
      if (!(name in NOT_OURS) && !repo.mentions(name))
        problems.push(
          `${where}, a word no source under apps/, packages/ or e2e/ has (if it is another library's, add it to NOT_OURS)`,
        );
    } else if (kind === 'function') {
      const bare = name.slice(0, -2);
      if (!(bare in NOT_OURS) && !repo.declares(bare))
        problems.push(
          `${where}, which no source under apps/, packages/ or e2e/ declares (if it is another library's, add it to NOT_OURS)`,
        );
    } else if (!name.includes('/')) {
      if (!(name in WRITTEN_BY_THE_SERVER) && !repo.isFile(name))
        problems.push(`${where}, which is no file's name in the repository`);
    } else if (!ROOTS.some((root) => repo.exists(path.posix.join(root, name.replace(/\/$/, ''))))) {
      problems.push(`${where}, which is under none of ${ROOTS_SHOWN}`);
    }
  }
  return problems;
}

function docs(): string[] {
  const list = ['README.md', ...fs.readdirSync(path.join(REPO, 'docs')).map((f) => `docs/${f}`)];
  for (const group of ['apps', 'packages'])
    for (const name of subfolders(group)) list.push(`${group}/${name}/README.md`);
  return list.filter((f) => f.endsWith('.md') && fs.existsSync(path.join(REPO, f)));
}

function theRepository(): Repo {
  const { files, baseNames } = repoEntries();
  const folders = new Set<string>();
  for (const file of files)
    for (let dir = path.posix.dirname(file); dir !== '.'; dir = path.posix.dirname(dir)) folders.add(dir);
  // Not this file: its samples name what is nowhere.
  const sources = [...files]
    .filter((f) => /^(?:apps|packages|e2e)\//.test(f) && /\.(?:ts|tsx|mts|mjs)$/.test(f))
    .filter((f) => !f.endsWith('.d.ts') && f !== THIS_FILE)
    .map((f) => fs.readFileSync(path.join(REPO, f), 'utf8'));
  const declared = declaredNames(sources);
  const words = new Set<string>();
  for (const text of sources) for (const [word] of text.matchAll(/[A-Za-z_$][\w$]*/g)) words.add(word);
  return {
    exists: (relative) => files.has(relative) || folders.has(relative),
    isFile: (baseName) => baseNames.has(baseName),
    declares: (name) => declared.has(name),
    mentions: (word) => words.has(word),
  };
}

describe('the names in the docs', () => {
  it('are files, folders and functions that exist', () => {
    const repo = theRepository();
    const problems = docs().flatMap((doc) =>
      missingNames(doc, fs.readFileSync(path.join(REPO, doc), 'utf8'), repo),
    );
    expect(problems).toEqual([]);
  });
});

describe('reading a doc for names', () => {
  const sample = [
    'The outbox (`outbox/`) owns `outbox/sql.ts`; see `apps/server/bench/quick.mjs` and `answers.ts`.',
    'Routes: `/api/calls`, `/healthz`, `GET /metrics`, `http://tempuri.org/`, `text/xml`.',
    'Run `pnpm --filter @school/server build`, set `DATA_DIR/books`, `src/features/<name>/<name>.css`.',
    '`createOutboxSql()`, `app.inject()`, `pg_is_in_recovery()`; `plugins/*.ts`, `dist/server.js`.',
    '`deleteForCalls` and `maxRequestLength`, not `AuthCode`, `sent_at`, `DATA_DIR`.',
    '```sh',
    'cat `store/in-a-fence.ts`',
    '```',
    '`packages/asmx`, `src/lib`, `N/duration`, `DATA_DIR`.',
    'See [the outbox](outbox.md#the-hedge), [`lanes.ts`](../apps/server/src/outbox/lanes.ts), [w](https://x.org/a.ts).',
  ].join('\n');

  it('takes paths and calls, and leaves URLs, MIME types, commands, placeholders and code blocks', () => {
    expect(mentionsIn(sample)).toEqual([
      { line: 1, name: 'outbox/', kind: 'path' },
      { line: 1, name: 'outbox/sql.ts', kind: 'path' },
      { line: 1, name: 'apps/server/bench/quick.mjs', kind: 'path' },
      { line: 1, name: 'answers.ts', kind: 'path' },
      { line: 4, name: 'createOutboxSql()', kind: 'function' },
      { line: 5, name: 'deleteForCalls', kind: 'identifier' },
      { line: 5, name: 'maxRequestLength', kind: 'identifier' },
      { line: 9, name: 'packages/asmx', kind: 'path' },
      { line: 9, name: 'src/lib', kind: 'path' },
      { line: 10, name: 'outbox.md', kind: 'link' },
      { line: 10, name: '../apps/server/src/outbox/lanes.ts', kind: 'link' },
      { line: 10, name: 'lanes.ts', kind: 'path' },
    ]);
  });

  it('names the doc, the line and each name that is not there', () => {
    const nothing: Repo = {
      exists: () => false,
      isFile: () => false,
      declares: () => false,
      mentions: () => false,
    };
    expect(missingNames('docs/sample.md', sample, nothing)).toEqual([
      `docs/sample.md:1 names \`outbox/\`, which is under none of ${ROOTS_SHOWN}`,
      `docs/sample.md:1 names \`outbox/sql.ts\`, which is under none of ${ROOTS_SHOWN}`,
      `docs/sample.md:1 names \`apps/server/bench/quick.mjs\`, which is under none of ${ROOTS_SHOWN}`,
      "docs/sample.md:1 names `answers.ts`, which is no file's name in the repository",
      "docs/sample.md:4 names `createOutboxSql()`, which no source under apps/, packages/ or e2e/ declares (if it is another library's, add it to NOT_OURS)",
      "docs/sample.md:5 names `deleteForCalls`, a word no source under apps/, packages/ or e2e/ has (if it is another library's, add it to NOT_OURS)",
      `docs/sample.md:9 names \`packages/asmx\`, which is under none of ${ROOTS_SHOWN}`,
      `docs/sample.md:9 names \`src/lib\`, which is under none of ${ROOTS_SHOWN}`,
      'docs/sample.md:10 links to outbox.md, which is not there (docs/outbox.md)',
      'docs/sample.md:10 links to ../apps/server/src/outbox/lanes.ts, which is not there (apps/server/src/outbox/lanes.ts)',
      "docs/sample.md:10 names `lanes.ts`, which is no file's name in the repository",
    ]);
  });

  it('finds in the repository what is there, from any of the roots, and only that', () => {
    const text = [
      'This test, `apps/server/test/doc-names.test.ts`, also `test/doc-names.test.ts`, `doc-names.test.ts`,',
      '`test/`, `src/app.ts`, `asmx/`, `startTestApp()`, `startTestApp`; not `test/no-such-file.ts`, `noSuchFunction()`.',
      '`noSuchName` either.',
      '[this test](../apps/server/test/doc-names.test.ts), [no such](../apps/server/test/no-such.test.ts#top).',
    ].join('\n');
    expect(missingNames('docs/sample.md', text, theRepository())).toEqual([
      `docs/sample.md:2 names \`test/no-such-file.ts\`, which is under none of ${ROOTS_SHOWN}`,
      "docs/sample.md:2 names `noSuchFunction()`, which no source under apps/, packages/ or e2e/ declares (if it is another library's, add it to NOT_OURS)",
      "docs/sample.md:3 names `noSuchName`, a word no source under apps/, packages/ or e2e/ has (if it is another library's, add it to NOT_OURS)",
      'docs/sample.md:4 links to ../apps/server/test/no-such.test.ts, which is not there (apps/server/test/no-such.test.ts)',
    ]);
  });
});
