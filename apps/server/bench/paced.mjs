// An open-loop load at an even pace, run as a process of its own: request i starts at i / RATE s,
// whether or not the earlier ones have been answered, over at most CONNECTIONS keep-alive
// connections (a request that finds them all busy waits for one, and that wait counts in its
// time). Each request is timed with performance.now() from its start to the end of its answer.
// Prints {sent, rps, p50, p99, max, failed} (ms) as JSON on stdout.
//   node bench/paced.mjs '{"url":"http://127.0.0.1:3000/healthz","rate":1000,"seconds":10}'
// with optional "method", "headers", "body" and "connections" (32), and "slowest": n to add the n
// slowest requests as [start (epoch ms), time (ms)], slowest first (when they were slow).
// Why not autocannon's overallRate: it gives each connection a quota per second, sent back to back
// as the second starts, so the server sees bursts at its full rate and then nothing.
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

const spec = JSON.parse(process.argv[2]);
const { url, method = 'GET', headers = {}, body, rate, seconds, connections = 32, slowest = 0 } = spec;
const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
const payload = body === undefined ? undefined : Buffer.from(body);
const total = Math.round(rate * seconds);
const times = new Float64Array(total);
const starts = new Float64Array(total);
let answered = 0;
let failed = 0;

function send(i) {
  const start = performance.now();
  starts[i] = start;
  const req = http.request(url, {
    method,
    agent,
    headers: payload ? { ...headers, 'content-length': payload.length } : headers,
  });
  const fail = () => {
    failed++;
    answered++;
  };
  req.once('error', fail);
  req.once('response', (res) => {
    res.resume();
    res.once('end', () => {
      if (res.statusCode < 200 || res.statusCode > 299) return fail();
      times[i] = performance.now() - start;
      answered++;
    });
  });
  req.end(payload);
}

const t0 = performance.now();
let sent = 0;
while (sent < total) {
  // Every request due by now: a late timer sends the ones it missed at once.
  const due = Math.min(total, Math.floor(((performance.now() - t0) * rate) / 1000) + 1);
  while (sent < due) send(sent++);
  await sleep(1);
}
const elapsed = (performance.now() - t0) / 1000;
while (answered < total) await sleep(5);
agent.destroy();
const ok = [...times].filter((t) => t > 0).sort((a, b) => a - b);
const at = (q) => ok[Math.min(ok.length - 1, Math.ceil(q * ok.length) - 1)];
const result = { sent, rps: sent / elapsed, p50: at(0.5), p99: at(0.99), max: ok.at(-1), failed };
if (slowest > 0)
  result.slowest = [...times.keys()]
    .filter((i) => times[i] > 0)
    .sort((a, b) => times[b] - times[a])
    .slice(0, slowest)
    .map((i) => [performance.timeOrigin + starts[i], times[i]]);
console.log(JSON.stringify(result));
