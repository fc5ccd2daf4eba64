// The floors of the stage table (docs/performance.md#the-stages-of-one-call-benchstagesmjs): what
// the stages of one SOAP AuthCode cost in a loop of their own, in this process, hot in the CPU's
// caches. Each is the same code the server runs, bundled from the sources with esbuild as
// build.mjs bundles it: reading the bench's envelope, validating its parameters (libphonenumber
// with full metadata), sealing its SMS text (AES-256-GCM). The masking's floor is
// bench/masking.mjs's "what a call record masks".
//   node bench/stage-floors.mjs
// BENCH_CALLS (200 000 a measurement), BENCH_ROUNDS (3): the lowest of the rounds, µs a call.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { importBundled } from './bundled.mjs';
import { SOAP_AUTHCODE } from './full-speed.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const calls = Number(process.env.BENCH_CALLS ?? 200_000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);

const code = await importBundled(
  `export { readSoapRequest } from '@school/asmx';
  export { groups, validateParams } from '@school/contract';
  export { createSealer } from './src/secrets/sealer.ts';`,
  path.join(here, '..'),
);

const group = code.groups.find((g) => g.path === SOAP_AUTHCODE.path);
const operation = group?.operations.find((o) => o.name === 'AuthCode');
if (!group || !operation) throw new Error(`no AuthCode at ${SOAP_AUTHCODE.path}`);
const body = Buffer.from(SOAP_AUTHCODE.body);
const read = () =>
  code.readSoapRequest({
    body,
    contentType: SOAP_AUTHCODE.headers['content-type'],
    soapAction: SOAP_AUTHCODE.headers.soapaction,
    group,
    namespace: 'http://tempuri.org/',
  });
const first = read();
if (!first.ok || first.operation.name !== 'AuthCode') throw new Error('the bench envelope was not read');
const params = Object.fromEntries(first.params);
if (!code.validateParams(operation, (n) => params[n]).ok)
  throw new Error("the bench's parameters are not valid");
const sealer = code.createSealer(Buffer.alloc(32, 7));
const text = 'Your code is 4821';

const floors = [
  ['reading the envelope (readSoapRequest)', read],
  [
    'validation (validateParams: the code, the phone)',
    () => code.validateParams(operation, (n) => params[n]),
  ],
  ['sealing the SMS text (AES-256-GCM)', () => sealer.seal(text, '0190b7c1-2f3a-7abc-8def-0123456789ab')],
];

const cpuMicros = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};
console.log(
  `The stages' floors: µs a call in a loop of their own, the lowest of ${rounds} rounds of ${calls}`,
);
for (const [name, f] of floors) {
  for (let i = 0; i < calls / 10; i++) f();
  let best = Number.POSITIVE_INFINITY;
  for (let r = 0; r < rounds; r++) {
    const t0 = cpuMicros();
    for (let i = 0; i < calls; i++) f();
    best = Math.min(best, (cpuMicros() - t0) / calls);
  }
  console.log(`${name.padEnd(52)}${best.toFixed(2).padStart(8)}`);
}
