// Masking (docs/security.md#what-is-masked-and-where), what every call's record runs before it is
// written: on 1 MiB bodies crafted to make it work hardest (the body limit, MAX_BODY_BYTES), and on
// the common calls. The masking is bundled from packages/asmx with esbuild, as build.mjs bundles it
// into the server, and run in this process.
//
// Hostile: for each case, maskRequestBody on 1 MiB, the fastest of BENCH_RUNS (25) runs, in ms, and
// the ratio of its time on 1 MiB to its time on ½ MiB (run in turns): 2 is linear, a quadratic pass
// shows 4.
// Target: every case well under 50 ms, every ratio near 2.
// Common calls: µs per call of what the record masks for a SOAP AuthCode (the URL and headers, the
// envelope, the answer) and an HTTP GET AuthCode. With BENCH_BASELINE=<another checkout's root>,
// the same calls with that checkout's masking (its own functions), and the ratio head ÷ base.
//   node --expose-gc bench/masking.mjs
//   BENCH_BASELINE=/tmp/base node --expose-gc bench/masking.mjs
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { importBundled } from './bundled.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const runs = Number(process.env.BENCH_RUNS ?? 25);
const NAMES = ['code'];
const MiB = 1024 * 1024;

/** The masking of the checkout at `root`, bundled. */
const masking = (root) => importBundled("export * from '@school/asmx';", path.join(root, 'apps/server'));

/** The fastest of `runs` runs of `f`, in ms. */
function fastest(f) {
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < runs; i++) {
    globalThis.gc?.();
    const t0 = performance.now();
    f();
    best = Math.min(best, performance.now() - t0);
  }
  return best;
}

/** The fastest run of each of two functions, run in turns `runs` times, in ms. */
function fastestInTurns(f, g) {
  const best = [Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY];
  for (let i = 0; i < runs; i++) {
    for (const [k, h] of [f, g].entries()) {
      globalThis.gc?.();
      const t0 = performance.now();
      h();
      best[k] = Math.min(best[k], performance.now() - t0);
    }
  }
  return best;
}

const fill = (unit, size) => unit.repeat(Math.ceil(size / unit.length)).slice(0, size);
const part = (name, content) =>
  `--XyZ\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${content}\r\n`;

const HOSTILE = [
  ['200 000 code= fields', 'code=Lk1&'],
  ['code=code=code=…', 'code='],
  ['%63ode= fields', '%63ode=Lk&'],
  ['%43%4F%44%45 without separator', '%43%4F%44%45'],
  ['code. junk, no separator', 'code.'],
  ['code"" quotes, no separator', 'code"" '],
  ['JSON objects', '{"code":"Lk1","phone":"+1"},'],
  ['65 000 code elements', '<code>Lk1</code>'],
  ['self-closing code, other tags', '<code/><x>'],
  ['self-closing code, code words', '<code/> code code code code '],
  ['code tags in comments', '<!--<code>x'],
  ['code tags, no >', '<code '],
  ['prefixed code tags', `<${'a'.repeat(60)}:code `],
  ['start tags, no >', '<a '],
  ['multipart: code parts', part('code', 'LkB7abc')],
  ['multipart: phone parts', part('phone', '+447911123456')],
  ['multipart: delimiters, no blank line', '--a\r\n'],
  ['plain text', 'abcdefghij '],
];

const head = await masking(path.join(here, '../../..'));
console.log(
  `maskRequestBody on hostile bodies (fastest of ${runs} runs; load average ${os.loadavg()[0].toFixed(1)})`,
);
console.log(`${'case'.padEnd(38)} ${'1 MiB ms'.padStart(9)} ${'1 MiB ÷ ½ MiB'.padStart(14)}`);
let worst = 0;
for (const [name, unit] of HOSTILE) {
  const full = fill(unit, MiB);
  const half = fill(unit, MiB / 2);
  const mask = (text) => () => head.maskRequestBody(text, NAMES, ['LkB7abc'], []);
  // In turns, so that both sizes see the same moments of a busy machine.
  const [ms, halfMs] = fastestInTurns(mask(full), mask(half));
  worst = Math.max(worst, ms);
  console.log(`${name.padEnd(38)} ${ms.toFixed(1).padStart(9)} ${(ms / halfMs).toFixed(2).padStart(14)}`);
}
console.log(`worst: ${worst.toFixed(1)} ms per MiB (target: well under 50)`);

// --- the common calls ----------------------------------------------------------------------------

const ENVELOPE =
  '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><AuthCode xmlns="http://tempuri.org/"><code>482913</code><phone>+447911123456</phone></AuthCode></soap:Body></soap:Envelope>';
const SOAP_HEAD =
  'POST /AuthCodeSending.asmx HTTP/1.1\r\nHost: localhost:8080\r\nContent-Type: text/xml; charset=utf-8\r\nContent-Length: 330\r\nSOAPAction: "http://tempuri.org/AuthCode"\r\nUser-Agent: bench\r\n\r\n';
const SOAP_ANSWER =
  'HTTP/1.1 200\r\nContent-Type: text/xml; charset=utf-8\r\nCache-Control: private, max-age=0\r\n\r\n<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema"><soap:Body><AuthCodeResponse xmlns="http://tempuri.org/" /></soap:Body></soap:Envelope>';
const GET_URL = '/AuthCodeSending.asmx/AuthCode?code=482913&phone=%2B447911123456';
const GET_ANSWER = 'HTTP/1.1 200\r\nCache-Control: private, max-age=0\r\n\r\n';

/** What the record masks of one call, with this masking's functions (exchange.ts; before: its own). */
function callMasking(m) {
  if (m.maskRequestText) {
    return (head, _url, body, answer, read) => {
      const found = [];
      m.maskRequestText(head, NAMES, found);
      m.maskRequestBody(body, NAMES, read, found);
      const echoes = [...read, ...m.echoForms(found, NAMES)];
      m.maskAnswerText(answer, NAMES, echoes);
    };
  }
  // Before: the URL's query, the body (the SOAP door with what its reader read).
  return (_head, url, body, _answer, read) => {
    m.maskQuery(url, NAMES);
    m.maskRequestBody(body, NAMES, read);
  };
}

const CALLS = 100_000;
function perCall(m) {
  const call = callMasking(m);
  const soap = () => {
    for (let i = 0; i < CALLS; i++)
      call(SOAP_HEAD, '/AuthCodeSending.asmx', ENVELOPE, SOAP_ANSWER, ['482913']);
  };
  const get = () => {
    for (let i = 0; i < CALLS; i++) call(`GET ${GET_URL} HTTP/1.1\r\n\r\n`, GET_URL, '', GET_ANSWER, []);
  };
  return { soap: (fastest(soap) * 1000) / CALLS, get: (fastest(get) * 1000) / CALLS };
}

console.log('\nwhat a call record masks, µs per call');
const ours = perCall(head);
if (process.env.BENCH_BASELINE) {
  const base = perCall(await masking(path.resolve(process.env.BENCH_BASELINE)));
  const again = perCall(head);
  for (const kind of ['soap', 'get']) {
    const h = Math.min(ours[kind], again[kind]);
    console.log(
      `${kind.padEnd(5)} head ${h.toFixed(2)}  base ${base[kind].toFixed(2)}  head ÷ base ${(h / base[kind]).toFixed(2)}`,
    );
  }
} else {
  for (const kind of ['soap', 'get']) console.log(`${kind.padEnd(5)} ${ours[kind].toFixed(2)}`);
}
