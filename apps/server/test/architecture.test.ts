import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  describeImport,
  type FolderEdge,
  findCycles,
  folderOf,
  type Import,
  ROOT_FOLDER,
  readImportGraph,
} from './import-graph.js';

/**
 * The server's layers, checked on its imports. The write path runs one way,
 * store → outbox → recording → routes: a lower folder never imports a higher one, so each can be
 * read, tested and changed without the ones above it. Type imports count: a type from a higher
 * folder ties the design to it as much as a function does.
 *
 * Each failure names the file, the line and the import, and says what to do instead.
 */

// Read once for every check: a hundred-odd files, some tens of milliseconds.
const graph = readImportGraph();

/** A folder as messages name it. */
const shown = (folder: string) => (folder === ROOT_FOLDER ? 'src/ (app.ts, config.ts, …)' : `${folder}/`);

/** `store/calls.ts:4 imports '../outbox/intake.js' (outbox/intake.ts)` */
const named = (i: Import) => `${describeImport(i)} (${i.to})`;

/** The specifier `file` would import store/index.ts with: `../store/index.js`. */
function storeIndexFrom(file: string): string {
  const relative = path.posix.relative(path.posix.dirname(file), 'store/index.js');
  return relative.startsWith('.') ? relative : `./${relative}`;
}

/**
 * Folders a folder must not import, for the layers of the write path and the reads beside it:
 * the outbox knows nothing of who records calls or reads them; History and the statistics read
 * what was recorded and know nothing of how it was written.
 */
const LAYERS: readonly { readonly folder: string; readonly above: readonly string[] }[] = [
  { folder: 'outbox', above: ['recording', 'routes', 'plugins', 'history', 'stats'] },
  { folder: 'recording', above: ['routes', 'plugins'] },
  { folder: 'history', above: ['recording', 'routes', 'plugins', 'outbox', 'stats'] },
  { folder: 'stats', above: ['recording', 'routes', 'plugins', 'outbox'] },
];

describe('the import graph of apps/server/src', () => {
  it('is read whole: every relative import names a file under src/', () => {
    // A guard that reads nothing passes everything: make sure the scan saw the server.
    expect(graph.files).toContain('app.ts');
    expect(graph.files).toContain('store/index.ts');
    expect(graph.folderEdges.length).toBeGreaterThan(0);
    const unresolved = graph.unresolved.map(
      (i) =>
        `${describeImport(i)} names no .ts or .mjs file under src/: fix the path, or teach test/import-graph.ts ` +
        'the kind of file it names, so that the checks below see the import.',
    );
    expect(unresolved, 'imports the architecture checks cannot follow').toEqual([]);
  });

  it('store/ imports only itself and packages', () => {
    const violations = graph.edges
      .filter((i) => folderOf(i.from) === 'store' && folderOf(i.to as string) !== 'store')
      .map(
        (i) =>
          `${named(i)}: store/ is the bottom layer and imports only itself and packages (kysely, pg, ` +
          `better-sqlite3, @school/contract, node:*). Declare what the store needs in store/ (a type, or a ` +
          `function the caller passes in) and let ${shown(folderOf(i.to as string))} import it from ` +
          'store/index.ts.',
      );
    expect(violations, 'store/ imports a folder above it').toEqual([]);
  });

  it('outside store/, the store is imported only through store/index.ts', () => {
    const violations = graph.edges
      .filter((i) => folderOf(i.from) !== 'store' && folderOf(i.to as string) === 'store')
      .filter((i) => i.to !== 'store/index.ts')
      .map(
        (i) =>
          `${named(i)}: import it from '${storeIndexFrom(i.from)}' instead (export it there if it belongs to ` +
          "the store's surface), so that the files inside store/ can move without breaking their callers.",
      );
    expect(violations, "imports of the store's internals").toEqual([]);
  });

  it('has no cycle between folders', () => {
    const edges = new Map(graph.folderEdges.map((e) => [`${e.from}\0${e.to}`, e]));
    const edge = (from: string, to: string) => edges.get(`${from}\0${to}`) as FolderEdge;
    const limit = 100;
    const cycles = findCycles(graph.folderEdges, limit);
    const violations = cycles.map((cycle) => {
      const steps = cycle.slice(1).map((to, k) => edge(cycle[k] as string, to));
      // The step with the fewest imports is most likely the one that points the wrong way.
      const thinnest = steps.reduce((a, b) => (b.count < a.count ? b : a));
      const imports = graph.edges.filter(
        (i) => folderOf(i.from) === thinnest.from && folderOf(i.to as string) === thinnest.to,
      );
      return (
        `${cycle.join(' → ')} (${steps.map((s) => `${s.from} → ${s.to} ${s.count}×`).join(', ')}); ` +
        `the thinnest step, ${thinnest.from} → ${thinnest.to}: ${imports.map(named).join('; ')}`
      );
    });
    if (cycles.length === limit) violations.push(`… and maybe more: the search stops at ${limit} cycles`);
    expect(
      violations,
      'folders that import each other (. is src/ itself: app.ts, config.ts, …). In each cycle, decide which ' +
        'folder is the lower one and move what it takes from the other down into it, or have the caller ' +
        'pass it in; the thinnest step is most likely the one that points the wrong way',
    ).toEqual([]);
  });

  it('the write path runs one way (store → outbox → recording → routes), its readers beside it', () => {
    const violations = LAYERS.flatMap(({ folder, above }) =>
      graph.edges
        .filter((i) => folderOf(i.from) === folder && above.includes(folderOf(i.to as string)))
        .map(
          (i) =>
            `${named(i)}: ${shown(folder)} sits below ${above.map(shown).join(' and ')} and must not import ` +
            `them. Move what it needs down into ${shown(folder)} (or a folder below it) and let ` +
            `${shown(folderOf(i.to as string))} import it from there, or have the caller pass it in.`,
        ),
    );
    expect(violations, 'imports against the layers of the write path').toEqual([]);
  });
});
