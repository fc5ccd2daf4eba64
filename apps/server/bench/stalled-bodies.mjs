// pnpm bench: what stalled uploads make the server hold. BENCH_STALLED (default 3000) connections
// each announce a 1 MB - 1 byte SOAP body, send all of it but the last byte, and wait. The
// server's RSS is read before, while they wait, and after they are gone; the target is under
// 400 MB while they wait, and back near idle after. Not a test: it prints figures.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const COUNT = Number(process.env.BENCH_STALLED ?? 3000);
const BODY = 1024 * 1024 - 1;

const rssMb = (pid) => {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-stalled-bench-'));
const port = 20000 + Math.floor(Math.random() * 20000);
const child = spawn(
  process.execPath,
  [
    ...(process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean),
    '--max-semi-space-size=8',
    path.join(here, '../dist/server.js'),
  ],
  {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'error' },
    stdio: ['ignore', 'ignore', 'inherit'],
  },
);
try {
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) break;
    } catch {}
    if (i > 400) throw new Error('server did not start');
    await sleep(50);
  }
  await sleep(1000);
  const idle = rssMb(child.pid);

  const head = `POST /AuthCodeSending.asmx HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: text/xml; charset=utf-8\r\nSOAPAction: "http://tempuri.org/AuthCode"\r\nContent-Length: ${BODY}\r\n\r\n`;
  const chunk = Buffer.alloc(64 * 1024, 'x');
  const sockets = [];
  const outcomes = { held: 0, refused: 0, closed: 0 };
  let peak = idle;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMb(child.pid));
  }, 100);
  await Promise.all(
    Array.from({ length: COUNT }, async () => {
      const socket = net.connect(port, '127.0.0.1');
      sockets.push(socket);
      let answered = '';
      socket.on('data', (d) => {
        answered += d.toString('latin1');
      });
      socket.on('error', () => {});
      await new Promise((resolve) => {
        socket.once('connect', resolve);
        socket.once('close', resolve);
      });
      if (socket.destroyed) {
        outcomes.closed++;
        return;
      }
      socket.write(head);
      let left = BODY - 1;
      while (left > 0 && !socket.destroyed) {
        const piece = chunk.subarray(0, Math.min(chunk.length, left));
        left -= piece.length;
        if (!socket.write(piece)) await new Promise((r) => socket.once('drain', r).once('close', r));
        if (answered) break;
      }
      await sleep(200);
      if (answered.startsWith('HTTP/1.1 503')) outcomes.refused++;
      else if (socket.destroyed) outcomes.closed++;
      else outcomes.held++;
    }),
  );
  await sleep(2000);
  const waiting = rssMb(child.pid);
  for (const socket of sockets) socket.destroy();
  // Ordinary traffic goes on meanwhile, as it would (it also lets the collector run).
  for (let i = 0; i < 300; i++) await fetch(`http://127.0.0.1:${port}/PushNotificationMobile.asmx?wsdl`);
  await sleep(Number(process.env.BENCH_SETTLE_MS ?? 5000));
  clearInterval(sampler);
  const after = rssMb(child.pid);

  console.log(`${COUNT} connections announcing ${BODY} bytes each, all but the last byte sent:`);
  console.log(
    `  bodies held: ${outcomes.held}, refused at once (503): ${outcomes.refused}, connections closed: ${outcomes.closed}`,
  );
  console.log(
    `  RSS idle ${idle.toFixed(0)} MB, peak ${peak.toFixed(0)} MB, while waiting ${waiting.toFixed(0)} MB, after ${after.toFixed(0)} MB`,
  );
  console.log(`  peak / 400 MB target: ${(peak / 400).toFixed(2)} ${peak <= 400 ? '(met)' : '(NOT met)'}`);
  console.log(`  after / idle: ${(after / idle).toFixed(2)}`);
} finally {
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  fs.rmSync(dataDir, { recursive: true, force: true });
}
