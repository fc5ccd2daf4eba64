import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Builds dist/ once before the server's tests, for those that start the real server process
 * (process, multi-instance, migrate-data): built once, never by two test files at the same time.
 */
export default function setup(): void {
  const serverDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  execFileSync(process.execPath, ['build.mjs'], { cwd: serverDir, stdio: 'pipe' });
}
