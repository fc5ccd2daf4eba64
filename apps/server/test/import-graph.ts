import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Who imports whom in apps/server/src, for the architecture test: the imports between files and,
 * above them, the graph of the folders under src/ (store, outbox, routes, ...).
 *
 * The source is read with a small scanner rather than the TypeScript compiler: it is fast, needs no
 * dependency, and an import is easy to recognise once comments, strings, template literals and
 * regular expressions are stepped over (a `'` inside a regular expression or an `import` in a
 * comment must not be taken for one). Each file is read once, from start to end.
 */

/** The server's source folder, which the graph is read from unless a test names another. */
export const SRC_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../src');

/** The folder of the files directly under src/ (app.ts, server.ts, config.ts). */
export const ROOT_FOLDER = '.';

/** An import or re-export found in a file's source. */
export interface Specifier {
  /** As written: `../outbox/intake.js`, `kysely`, `node:fs`. */
  readonly specifier: string;
  /** The line it is on, from 1. */
  readonly line: number;
  /** `import type …` / `export type … from`: still a dependency of the design, marked for messages. */
  readonly typeOnly: boolean;
}

/** One import of one file under src/. Paths are relative to src/, with `/`: `store/calls.ts`. */
export interface Import extends Specifier {
  readonly from: string;
  /** The file imported; undefined for a package (`kysely`, `@school/contract`, `node:fs`). */
  readonly to: string | undefined;
}

/** A file-level import from one folder into another. */
export interface FolderEdge {
  readonly from: string;
  readonly to: string;
  /** How many imports (statements, not names) of files in `from` name a file in `to`. */
  readonly count: number;
  /** The first of them, by file and line. */
  readonly example: Import;
}

export interface ImportGraph {
  /** Every .ts and .mjs file under src/, sorted. */
  readonly files: readonly string[];
  /** Every import of every file, packages included, by file and line. */
  readonly imports: readonly Import[];
  /** The imports of one file under src/ by another. */
  readonly edges: readonly Import[];
  /**
   * Relative specifiers that name no file the scan read (a typo, a file outside src/, a kind of file
   * it does not read): the graph would silently miss them, so the test wants none.
   */
  readonly unresolved: readonly Import[];
  /** The folders under src/ that hold a file, ROOT_FOLDER among them, sorted. */
  readonly folders: readonly string[];
  /** An edge A → B when a file in A imports a file in B (A ≠ B), sorted by A then B. */
  readonly folderEdges: readonly FolderEdge[];
}

/** The folder a file belongs to: the first segment of its path under src/, or ROOT_FOLDER. */
export function folderOf(file: string): string {
  const slash = file.indexOf('/');
  return slash < 0 ? ROOT_FOLDER : file.slice(0, slash);
}

/** `store/calls.ts:4 imports '../outbox/intake.js'` */
export function describeImport(i: Import): string {
  return `${i.from}:${i.line} ${i.typeOnly ? 'imports the types of' : 'imports'} '${i.specifier}'`;
}

/** Reads every .ts and .mjs file under `srcDir` and answers who imports whom. */
export function readImportGraph(srcDir: string = SRC_DIR): ImportGraph {
  const files = listSourceFiles(srcDir);
  const known = new Set(files);
  const imports: Import[] = [];
  for (const from of files) {
    const source = fs.readFileSync(path.join(srcDir, from), 'utf8');
    for (const found of scanSpecifiers(source)) {
      imports.push({ ...found, from, to: resolveSpecifier(from, found.specifier, known) });
    }
  }
  const isRelative = (i: Import) => i.specifier.startsWith('.') || i.specifier.startsWith('/');
  const edges = imports.filter((i) => i.to !== undefined);
  const unresolved = imports.filter((i) => i.to === undefined && isRelative(i));

  const byPair = new Map<string, { from: string; to: string; count: number; example: Import }>();
  for (const edge of edges) {
    const from = folderOf(edge.from);
    const to = folderOf(edge.to as string);
    if (from === to) continue;
    const key = `${from}\0${to}`;
    const pair = byPair.get(key);
    if (pair) pair.count++;
    else byPair.set(key, { from, to, count: 1, example: edge });
  }
  const folderEdges = [...byPair.values()].sort((a, b) => compare(a.from, b.from) || compare(a.to, b.to));
  const folders = [...new Set(files.map(folderOf))].sort(compare);
  return { files, imports, edges, unresolved, folders, folderEdges };
}

/** The folder graph as lines: `store → outbox (3: store/calls.ts imports outbox/intake.ts)`. */
export function formatFolderGraph(graph: Pick<ImportGraph, 'folderEdges'>): string[] {
  return graph.folderEdges.map(
    (e) => `${e.from} → ${e.to} (${e.count}: ${e.example.from} imports ${e.example.to as string})`,
  );
}

/**
 * Every elementary cycle of the folder graph, each as the folders along it with the first repeated
 * at the end (`['outbox', 'store', 'outbox']`), starting from its smallest folder so that each cycle
 * is found once. The graph has a dozen folders, so a plain depth-first walk is quick enough; as a
 * tangled graph can hold a great many cycles, the walk stops at `limit` of them.
 */
export function findCycles(folderEdges: readonly Pick<FolderEdge, 'from' | 'to'>[], limit = 100): string[][] {
  const next = new Map<string, string[]>();
  for (const { from, to } of folderEdges) next.set(from, [...(next.get(from) ?? []), to]);
  const cycles: string[][] = [];
  for (const start of [...next.keys()].sort(compare)) {
    const trail = [start];
    const onTrail = new Set(trail);
    const walk = (at: string) => {
      for (const to of next.get(at) ?? []) {
        if (cycles.length >= limit) return;
        if (to === start) cycles.push([...trail, start]);
        // Only folders after `start`: a cycle through a smaller one was found from that one.
        else if (compare(to, start) > 0 && !onTrail.has(to)) {
          trail.push(to);
          onTrail.add(to);
          walk(to);
          onTrail.delete(to);
          trail.pop();
        }
      }
    };
    walk(start);
  }
  return cycles;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function listSourceFiles(srcDir: string): string[] {
  return fs
    .readdirSync(srcDir, { recursive: true, encoding: 'utf8' })
    .map((file) => file.split(path.sep).join('/'))
    .filter((file) => /\.(ts|mjs)$/.test(file) && !file.endsWith('.d.ts'))
    .sort(compare);
}

/**
 * The file under src/ a specifier names, or undefined for a package or a file the scan did not read.
 * As TypeScript has it, `./x.js` stands for `./x.ts`; an extensionless `./x` for `./x.ts` or
 * `./x/index.ts`.
 */
function resolveSpecifier(from: string, specifier: string, known: ReadonlySet<string>): string | undefined {
  if (!specifier.startsWith('.') && !specifier.startsWith('/')) return undefined;
  const target = path.posix.join(path.posix.dirname(from), specifier);
  const candidates = target.endsWith('.js')
    ? [`${target.slice(0, -3)}.ts`, target]
    : target.endsWith('.mjs')
      ? [target, `${target.slice(0, -4)}.mts`]
      : [target, `${target}.ts`, `${target}/index.ts`];
  return candidates.find((file) => known.has(file));
}

type Token =
  | { readonly kind: 'name' | 'punct'; readonly value: string; readonly line: number }
  | { readonly kind: 'string'; readonly value: string; readonly line: number }
  | { readonly kind: 'other'; readonly value: ''; readonly line: number };

/**
 * The specifiers of a file's `import … from '…'`, `import '…'`, `import('…')` and
 * `export … from '…'`, in source order. `new URL('./x.mjs', import.meta.url)` is not an import.
 */
export function scanSpecifiers(source: string): Specifier[] {
  const tokens = tokenize(source);
  const found: Specifier[] = [];
  const at = (k: number): Token | undefined => tokens[k];
  const is = (k: number, kind: Token['kind'], value?: string) =>
    at(k)?.kind === kind && (value === undefined || at(k)?.value === value);
  const add = (k: number, typeOnly: boolean) => {
    const token = tokens[k] as Token;
    found.push({ specifier: token.value, line: token.line, typeOnly });
  };

  for (let k = 0; k < tokens.length; k++) {
    // `x.import` and `x?.import` are properties, not imports (`...import(…)` is one).
    if (is(k - 1, 'punct', '.') && !is(k - 2, 'punct', '.')) continue;
    if (is(k, 'name', 'import')) {
      if (is(k + 1, 'punct', '(')) {
        if (is(k + 2, 'string')) add(k + 2, false);
      } else if (is(k + 1, 'string')) {
        add(k + 1, false);
      } else if (!is(k + 1, 'punct', '.')) {
        // `import type from './x'` imports a default named `type`.
        const typeOnly = is(k + 1, 'name', 'type') && !is(k + 2, 'name', 'from') && !is(k + 2, 'punct', ',');
        let j = k + 1;
        while (j < tokens.length && !is(j, 'punct', ';') && !(is(j, 'name', 'from') && is(j + 1, 'string')))
          j++;
        if (is(j, 'name', 'from')) add(j + 1, typeOnly);
        k = j;
      }
    } else if (is(k, 'name', 'export')) {
      let j = k + 1;
      const typeOnly = is(j, 'name', 'type') && (is(j + 1, 'punct', '{') || is(j + 1, 'punct', '*'));
      if (typeOnly) j++;
      if (is(j, 'punct', '{')) {
        while (j < tokens.length && !is(j, 'punct', '}')) j++;
        j++;
      } else if (is(j, 'punct', '*')) {
        j++;
        if (is(j, 'name', 'as')) j += 2;
      } else {
        continue;
      }
      if (is(j, 'name', 'from') && is(j + 1, 'string')) add(j + 1, typeOnly);
      k = j - 1;
    }
  }
  return found;
}

/** After these words a `/` begins a regular expression, not a division. */
const BEFORE_EXPRESSION = new Set([
  'return',
  'typeof',
  'instanceof',
  'in',
  'of',
  'new',
  'delete',
  'void',
  'throw',
  'case',
  'do',
  'else',
  'yield',
  'await',
]);

const isNameChar = (c: number) =>
  (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === 36 || c > 127;

/**
 * The names, punctuation and string literals of a source, each with its line; comments are dropped,
 * numbers, regular expressions and template literals become `other` (an import's specifier is never
 * a template). One pass, each character looked at a bounded number of times.
 */
function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  const n = source.length;
  let i = source.startsWith('#!') ? source.indexOf('\n') : 0;
  if (i < 0) i = n;
  let line = 1;
  // Braces open in the code being read; inside a template literal's `${…}`, the count outside it
  // waits in `outer`, and the `}` that closes the `${` goes back into the template.
  let braces = 0;
  const outer: number[] = [];

  const lastMeansValue = () => {
    const last = tokens[tokens.length - 1];
    if (!last) return false;
    if (last.kind === 'name') return !BEFORE_EXPRESSION.has(last.value);
    if (last.kind === 'punct') return last.value === ')' || last.value === ']' || last.value === '}';
    return true;
  };

  /** Reads template text from `i` (just after the backquote or a `}`), up to its end or a `${`. */
  const readTemplate = () => {
    while (i < n) {
      const c = source[i];
      if (c === '\\') i += 2;
      else if (c === '`') {
        i++;
        tokens.push({ kind: 'other', value: '', line });
        return;
      } else if (c === '$' && source[i + 1] === '{') {
        i += 2;
        outer.push(braces);
        braces = 0;
        return;
      } else {
        if (c === '\n') line++;
        i++;
      }
    }
  };

  while (i < n) {
    const c = source.charCodeAt(i);
    const ch = source[i] as string;
    if (ch === '\n') {
      line++;
      i++;
    } else if (c === 32 || c === 9 || c === 13) {
      i++;
    } else if (ch === '/' && source[i + 1] === '/') {
      const end = source.indexOf('\n', i);
      i = end < 0 ? n : end;
    } else if (ch === '/' && source[i + 1] === '*') {
      const end = source.indexOf('*/', i + 2);
      const stop = end < 0 ? n : end + 2;
      for (let k = i; k < stop; k++) if (source[k] === '\n') line++;
      i = stop;
    } else if (ch === "'" || ch === '"') {
      // Kept as written, escapes and all: a specifier has none.
      const start = ++i;
      while (i < n && source[i] !== ch && source[i] !== '\n') i += source[i] === '\\' ? 2 : 1;
      tokens.push({ kind: 'string', value: source.slice(start, i), line });
      i++;
    } else if (ch === '`') {
      i++;
      readTemplate();
    } else if (ch === '/' && !lastMeansValue()) {
      // A regular expression: up to the `/` that is neither escaped nor in a [class], then flags.
      tokens.push({ kind: 'other', value: '', line });
      let inClass = false;
      i++;
      while (i < n && source[i] !== '\n') {
        const r = source[i];
        if (r === '\\') i++;
        else if (r === '[') inClass = true;
        else if (r === ']') inClass = false;
        else if (r === '/' && !inClass) break;
        i++;
      }
      i++;
      while (i < n && isNameChar(source.charCodeAt(i))) i++;
    } else if (c >= 48 && c <= 57) {
      tokens.push({ kind: 'other', value: '', line });
      while (i < n && (isNameChar(source.charCodeAt(i)) || source[i] === '.')) i++;
    } else if (isNameChar(c)) {
      const start = i;
      while (i < n && isNameChar(source.charCodeAt(i))) i++;
      tokens.push({ kind: 'name', value: source.slice(start, i), line });
    } else if (ch === '}' && braces === 0 && outer.length > 0) {
      // The end of a template's `${…}`: the template goes on.
      braces = outer.pop() as number;
      i++;
      readTemplate();
    } else {
      if (ch === '{') braces++;
      else if (ch === '}') braces--;
      tokens.push({ kind: 'punct', value: ch, line });
      i++;
    }
  }
  return tokens;
}
