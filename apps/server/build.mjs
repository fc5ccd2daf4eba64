// Bundles the server into dist/server.js. Workspace packages (TypeScript sources) are bundled in,
// with their own pure-JS dependencies; the server's npm dependencies stay external and load from
// node_modules, native better-sqlite3 included.
import { readFileSync } from 'node:fs';
import * as esbuild from 'esbuild';

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));
const workspace = (spec) => String(spec).startsWith('workspace:');
const external = Object.entries({ ...pkg.dependencies, ...pkg.devDependencies })
  .filter(([, spec]) => !workspace(spec))
  .map(([name]) => name);
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
};

if (process.argv.includes('--watch')) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
} else {
  await esbuild.build(options);
}
