// Bundles the server into dist/server.js, and its commands: `migrate-data` (SQLite → PostgreSQL,
// docs/deployment.md) into dist/migrate-data.js, `admin` (staff accounts, docs/security.md) into
// dist/admin.js. Workspace packages (TypeScript sources) are
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
      for (const worker of ['history/search-worker.mjs', 'store/checkpoint-worker.mjs'])
        copyFileSync(
          new URL(`./src/${worker}`, import.meta.url),
          new URL(`./dist/${worker.slice(worker.indexOf('/') + 1)}`, import.meta.url),
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
  // --quiet: warnings and errors only (`pnpm admin` builds before it runs; its output is the command's).
  logLevel: process.argv.includes('--quiet') ? 'warning' : 'info',
  plugins: [copyWorkers],
};

// The same bundling for the commands; they need no worker.
const commands = [
  { ...options, entryPoints: ['src/cli/migrate-data.ts'], outfile: 'dist/migrate-data.js', plugins: [] },
  { ...options, entryPoints: ['src/cli/admin.ts'], outfile: 'dist/admin.js', plugins: [] },
];

if (process.argv.includes('--watch')) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
  for (const command of commands) await (await esbuild.context(command)).watch();
} else {
  await Promise.all([esbuild.build(options), ...commands.map((command) => esbuild.build(command))]);
}
