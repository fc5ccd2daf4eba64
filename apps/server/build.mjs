// Bundles the server into dist/server.js, and the `migrate-data` command (SQLite → PostgreSQL,
// docs/deployment.md) into dist/migrate-data.js. Workspace packages (TypeScript sources) are
// bundled in, with their own pure-JS dependencies; the server's npm dependencies stay external and
// load from node_modules, native better-sqlite3 included. The worker threads' scripts (plain JS:
// the free-text search, the WAL checkpoints) are copied next to server.js, where search.ts and
// checkpointer.ts look for them at run time.
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import * as esbuild from 'esbuild';

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));
const workspace = (spec) => String(spec).startsWith('workspace:');
const external = Object.entries({ ...pkg.dependencies, ...pkg.devDependencies })
  .filter(([, spec]) => !workspace(spec))
  .map(([name]) => name);
// After every build (and rebuild in --watch): the workers go next to dist/server.js.
const copyWorkers = {
  name: 'copy-workers',
  setup(build) {
    build.onEnd(() => {
      mkdirSync(new URL('./dist/', import.meta.url), { recursive: true });
      for (const worker of ['search-worker.mjs', 'checkpoint-worker.mjs'])
        copyFileSync(
          new URL(`./src/store/${worker}`, import.meta.url),
          new URL(`./dist/${worker}`, import.meta.url),
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
  plugins: [copyWorkers],
};

// The same bundling for the command; it needs no worker.
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
