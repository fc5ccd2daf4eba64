/**
 * The import rules of the server and the packages, kept by dependency-cruiser in `pnpm lint`
 * (`pnpm lint:deps` alone): each violation is printed with the importing file, the file it imports
 * and the rule's comment, which says what to do instead. apps/server/test/architecture.test.ts
 * proves that each rule bites.
 *
 * The server's write path runs one way, store → outbox → recording → routes: a lower folder never
 * imports a higher one, so each can be read, tested and changed without the ones above it. History
 * and the statistics read beside it. Type imports count: a type from a higher folder ties the design
 * to it as much as a function does.
 *
 * Paths are matched relative to the repository's root: `apps/server/src/store/calls.ts`.
 */

const path = require('node:path');

const SRC = '^apps/server/src/';

/** A folder directly under src/ and everything in it: `^apps/server/src/(routes|plugins)/`. */
const folders = (...names) => `${SRC}(${names.join('|')})/`;

/**
 * A layer of the write path: `folder` must not import the folders above it. The outbox knows
 * nothing of who records calls or reads them; History and the statistics read what was recorded
 * and know nothing of how it was written, but read deliveries through the outbox's own functions.
 */
function layer(folder, above) {
  return {
    name: `${folder}-layer`,
    severity: 'error',
    comment:
      `${folder}/ sits below ${above.map((f) => `${f}/`).join(', ')} and must not import them. Move what ` +
      `it needs down into ${folder}/ (or a folder below it) and let the folder above import it from ` +
      'there, or have the caller pass it in.',
    from: { path: folders(folder) },
    to: { path: folders(...above) },
  };
}

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'These files import each other, through the chain shown. Decide which one is the lower one and ' +
        'move what it takes from the other down into it, or have the caller pass it in.',
      from: { path: ['^apps/server/src/', '^packages/'] },
      to: { circular: true },
    },
    {
      name: 'no-folder-cycle',
      severity: 'error',
      scope: 'folder',
      comment:
        'These folders of apps/server/src import each other. Decide which folder is the lower one and ' +
        'move what it takes from the other down into it, or have the caller pass it in.',
      from: { path: SRC },
      to: { path: SRC, circular: true },
    },
    {
      name: 'src-root-only-from-cli',
      severity: 'error',
      comment:
        'The files directly in src/ (app.ts, server.ts, config.ts, logging.ts, private-files.ts) sit on ' +
        'top: they import the folders, so a folder that imports them closes a circle. Only the entry ' +
        'points in cli/ may import them. Have the caller pass in what the folder needs (a config value, ' +
        'the logger), or move it down into the folder that owns it.',
      from: { path: `${SRC}[^/]+/`, pathNot: folders('cli') },
      to: { path: `${SRC}[^/]+$` },
    },
    {
      name: 'src-root-does-not-reach-cli',
      severity: 'error',
      comment:
        "cli/ holds the entry points (pnpm admin, migrate-data), which import src/'s files: src/'s files " +
        'must not import cli/, not even through another folder. Move what both need down into a folder ' +
        'below them.',
      from: { path: `${SRC}[^/]+$` },
      to: { path: folders('cli'), reachable: true },
    },
    {
      name: 'store-imports-only-itself',
      severity: 'error',
      comment:
        'store/ is the bottom layer and imports only itself and packages (kysely, pg, better-sqlite3, ' +
        '@school/contract, node:*). Declare what the store needs in store/ (a type, or a function the ' +
        'caller passes in) and let the other folder import it from store/index.ts.',
      from: { path: folders('store') },
      to: { path: SRC, pathNot: folders('store') },
    },
    {
      name: 'store-only-through-index',
      severity: 'error',
      comment:
        "Outside store/, import the store from store/index.ts ('../store/index.js') instead, and export it " +
        "there if it belongs to the store's surface, so that the files inside store/ can move without " +
        'breaking their callers.',
      from: { path: SRC, pathNot: folders('store') },
      to: { path: folders('store'), pathNot: `${SRC}store/index\\.ts$` },
    },
    layer('outbox', ['recording', 'routes', 'plugins', 'history', 'stats']),
    layer('recording', ['routes', 'plugins']),
    layer('history', ['recording', 'routes', 'plugins', 'stats']),
    layer('stats', ['recording', 'routes', 'plugins']),
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment:
        'This import names no file or package that can be found: fix the path (a relative import of ' +
        "the .ts file './x.ts' is written './x.js'), or add the package, so that the import rules see " +
        'what it imports.',
      from: { path: ['^apps/server/src/', '^packages/'] },
      to: { couldNotResolve: true },
    },
    {
      name: 'src-stays-in-src',
      severity: 'error',
      comment:
        'apps/server/src imports files under src/ and packages only: import a workspace package by its ' +
        'name (@school/contract, @school/asmx), and move what the server needs from a test or a script ' +
        'under src/.',
      from: { path: SRC },
      to: { dependencyTypes: ['local'], pathNot: SRC },
    },
    {
      name: 'packages-not-to-apps',
      severity: 'error',
      comment:
        'packages/ are shared by the apps and import no app. Move what the package needs from the app ' +
        'into the package (or have the app pass it in).',
      from: { path: '^packages/' },
      to: { path: '^apps/' },
    },
  ],
  options: {
    // Type-only imports are dependencies of the design too.
    tsPreCompilationDeps: true,
    // `./x.js` resolves to `./x.ts` as TypeScript has it. An absolute path: TypeScript reads the
    // `extends` of a relative one from the wrong folder.
    tsConfig: { fileName: path.join(__dirname, 'apps/server/tsconfig.json') },
    doNotFollow: { path: 'node_modules' },
    // The workspace packages are read through their package.json `exports` (src/index.ts).
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
    },
    skipAnalysisNotInRules: true,
  },
};
