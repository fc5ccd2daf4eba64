// What the benches that run the server's own code in their process share (masking.mjs,
// stage-floors.mjs): sources bundled with esbuild as build.mjs bundles them, then imported.
import * as esbuild from 'esbuild';

/** `contents` (TypeScript, its imports resolved from `resolveDir`) bundled and imported. */
export async function importBundled(contents, resolveDir) {
  const built = await esbuild.build({
    stdin: { contents, resolveDir, loader: 'ts' },
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'node',
    logLevel: 'warning',
  });
  return import(`data:text/javascript;base64,${Buffer.from(built.outputFiles[0].text).toString('base64')}`);
}
