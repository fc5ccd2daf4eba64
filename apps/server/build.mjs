// Bundles the server into dist/server.js, and the `migrate-data` command (SQLite → PostgreSQL,
// docs/deployment.md) into dist/migrate-data.js. Workspace packages (TypeScript sources) are
// bundled in, with their own pure-JS dependencies; the server's npm dependencies stay external and
// load from node_modules, native better-sqlite3 included. The free-text search worker (plain JS,
// run in a worker thread) is copied next to server.js, where search.ts looks for it at run time.
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import * as esbuild from 'esbuild';

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));
const workspace = (spec) => String(spec).startsWith('workspace:');
const external = Object.entries({ ...pkg.dependencies, ...pkg.devDependencies })
  .filter(([, spec]) => !workspace(spec))
  .map(([name]) => name);
// After every build (and rebuild in --watch): the worker goes next to dist/server.js.
const copySearchWorker = {
  name: 'copy-search-worker',
  setup(build) {
    build.onEnd(() => {
      mkdirSync(new URL('./dist/', import.meta.url), { recursive: true });
      copyFileSync(
        new URL('./src/store/search-worker.mjs', import.meta.url),
        new URL('./dist/search-worker.mjs', import.meta.url),
      );
    });
  },
};
const options = {
  entryPoints: ['src/server.ts'],
  outfile: 'dist/server.js',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20.19',
  sourcemap: true,
  external,
  logLevel: 'info',
  plugins: [copySearchWorker],
};

// The same bundling for the command; it needs no search worker.
const migrateData = {
  ...options,
  entryPoints: ['src/migrate-data.ts'],
  outfile: 'dist/migrate-data.js',
  plugins: [],
};

if (process.argv.includes('--watch')) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
  await (await esbuild.context(migrateData)).watch();
} else {
  await Promise.all([esbuild.build(options), esbuild.build(migrateData)]);
}
