// A sequential latency probe, run as a process of its own so that the load generator's work does not
// delay its clock: one keep-alive connection, COUNT requests one after another with SPACING ms
// between an answer and the next request, each timed with performance.now() from the request to
// the end of its answer. Prints {count, p50, p99, max} in ms as JSON on stdout.
//   node bench/probe.mjs '{"url":"http://127.0.0.1:3000/healthz","count":300,"spacing":3}'
// with optional "method", "headers" and "body". A non-2xx answer fails the probe.
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

const { url, method = 'GET', headers = {}, body, count = 300, spacing = 3 } = JSON.parse(process.argv[2]);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const payload = body === undefined ? undefined : Buffer.from(body);

function once() {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const req = http.request(url, {
      method,
      agent,
      headers: payload ? { ...headers, 'content-length': payload.length } : headers,
    });
    req.once('error', reject);
    req.once('response', (res) => {
      res.resume();
      res.once('end', () => {
        if (res.statusCode < 200 || res.statusCode > 299) reject(new Error(`${url}: ${res.statusCode}`));
        else resolve(performance.now() - start);
      });
    });
    req.end(payload);
  });
}

await once(); // opens the connection, not counted
const times = [];
for (let i = 0; i < count; i++) {
  await sleep(spacing);
  times.push(await once());
}
agent.destroy();
times.sort((a, b) => a - b);
const at = (q) => times[Math.min(times.length - 1, Math.ceil(q * times.length) - 1)];
console.log(JSON.stringify({ count, p50: at(0.5), p99: at(0.99), max: times.at(-1) }));
