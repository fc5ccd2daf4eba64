// What the CPU benches share (quick, stages, retry-storm, ab): a request at full speed from wrk (or
// autocannon without it), a process's CPU time from /proc, and the SOAP AuthCode they send.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import autocannon from 'autocannon';

const run = promisify(execFile);

/** µs in one tick of /proc's CPU times (USER_HZ is 100 on Linux). */
export const TICK_US = 1_000_000 / 100;

/** SOAP 1.1 AuthCode, as the benches and the figures send it. */
export const SOAP_AUTHCODE = {
  method: 'POST',
  path: '/AuthCodeSending.asmx',
  headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '"http://tempuri.org/AuthCode"' },
  body: '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema"><soap:Body><AuthCode xmlns="http://tempuri.org/"><code>4821</code><phone>+447911123456</phone></AuthCode></soap:Body></soap:Envelope>',
};

/** CPU ticks (user + system, every thread) a process has used so far. */
export function cpuTicks(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  // After the command (in parentheses, which may hold spaces): utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/**
 * The load generator: wrk (`apt-get install wrk`; one thread saturates even the bare route) when
 * the machine has it, else autocannon, whose JavaScript client cannot, so figures taken with one
 * are not compared with the other's.
 */
export const LOAD_TOOL = await run('wrk', ['--version']).then(
  () => 'wrk',
  // wrk prints its version and exits 1: only a missing binary is ENOENT.
  (err) => (err.code === 'ENOENT' ? 'autocannon' : 'wrk'),
);

const scripts = fs.mkdtempSync(path.join(os.tmpdir(), 'school-wrk-'));
process.once('exit', () => fs.rmSync(scripts, { recursive: true, force: true }));
let scriptCount = 0;

/**
 * `request` (method, path, headers, body) sent to `url` over `connections` keep-alive connections
 * as fast as they are answered, for `seconds`; answers how many were answered. A non-2xx answer
 * or a socket error fails it.
 */
export async function fullSpeed(url, request, seconds, connections = 16) {
  if (LOAD_TOOL === 'autocannon') {
    const result = await autocannon({ url, connections, duration: seconds, requests: [request] });
    if (result.non2xx > 0 || result.errors > 0)
      throw new Error(`${url}${request.path}: ${result.non2xx} non-2xx, ${result.errors} errors`);
    return result.requests.total;
  }
  const script = path.join(scripts, `request-${++scriptCount}.lua`);
  fs.writeFileSync(
    script,
    `wrk.method = ${JSON.stringify(request.method)}\n` +
      `wrk.body = ${JSON.stringify(request.body ?? '')}\n` +
      Object.entries(request.headers ?? {})
        .map(([k, v]) => `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}\n`)
        .join(''),
  );
  const { stdout } = await run('wrk', [
    '-t1',
    `-c${connections}`,
    `-d${seconds}s`,
    '-s',
    script,
    `${url}${request.path}`,
  ]);
  const bad = /Non-2xx or 3xx responses: (\d+)|Socket errors: (.*)/.exec(stdout);
  if (bad) throw new Error(`${url}${request.path}: ${bad[0]}`);
  const answered = /(\d+) requests in/.exec(stdout);
  if (!answered) throw new Error(`wrk said nothing of requests:\n${stdout}`);
  return Number(answered[1]);
}
