// A script of bench/ (paced.mjs, probe.mjs) in a process of its own, its clock not delayed by the
// caller's work: given `req` (method, path, headers, body) to send to `url` and `spec`'s settings
// as JSON, it prints its figures as JSON, which this answers.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const here = path.dirname(fileURLToPath(import.meta.url));
const runFile = promisify(execFile);

export async function runScript(script, url, req, spec) {
  const args = {
    url: `${url}${req.path}`,
    method: req.method,
    headers: req.headers,
    body: req.body,
    ...spec,
  };
  const { stdout } = await runFile(process.execPath, [path.join(here, script), JSON.stringify(args)]);
  return JSON.parse(stdout);
}
