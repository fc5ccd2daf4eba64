import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The built command line (dist/admin.js, built once by the global setup). */
const ADMIN_JS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'admin.js');

export interface AdminResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** `pnpm admin …` as an operator runs it, with only `env` and PATH in its environment. */
export function runAdmin(
  args: readonly string[],
  env: Record<string, string>,
  stdin = '',
): Promise<AdminResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [ADMIN_JS, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: 'pipe',
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
    child.stdin.end(stdin);
  });
}
