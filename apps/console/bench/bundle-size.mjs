#!/usr/bin/env node
// Gzipped size of the JavaScript a browser fetches on the first load of the console after logging
// in, against the budget: the entry chunk and what it imports statically, plus the landing page's
// own chunk (the Dashboard, lazy in router.tsx) and its static imports. Other pages are fetched
// only when opened and are not counted. Run after `vite build`.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

// 200 KB in decimal kilobytes (200,000 bytes), gzip at zlib's default level (6), as most servers
// and CDNs send it: the stricter reading of "200 KB".
const BUDGET = 200_000;
const dist = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist');

let manifest;
try {
  manifest = JSON.parse(readFileSync(path.join(dist, '.vite', 'manifest.json'), 'utf8'));
} catch (error) {
  console.error(`No build manifest in ${dist} (${error.code ?? error.message}): run \`pnpm build\` first.`);
  process.exit(2);
}

const entries = Object.entries(manifest).filter(([, chunk]) => chunk.isEntry);
if (entries.length !== 1) {
  console.error(`Expected one entry chunk in the manifest, found ${entries.length}.`);
  process.exit(2);
}

/** The page staff land on after logging in (router.tsx's index route). */
const LANDING = 'src/features/dashboard/components/dashboard-page.tsx';
if (!manifest[LANDING]) {
  console.error(`The landing page ${LANDING} is not a chunk of its own in the manifest.`);
  process.exit(2);
}

const seen = new Set();
const files = [];
function visit(key) {
  if (seen.has(key)) return;
  seen.add(key);
  const chunk = manifest[key];
  if (!chunk) throw new Error(`manifest has no chunk ${key}`);
  if (chunk.file.endsWith('.js')) files.push(chunk.file);
  for (const imported of chunk.imports ?? []) visit(imported);
}
visit(entries[0][0]);
visit(LANDING);

let total = 0;
const rows = files.map((file) => {
  const bytes = readFileSync(path.join(dist, file));
  const gzipped = gzipSync(bytes).length;
  total += gzipped;
  return { file, raw: bytes.length, gzipped };
});

const kb = (n) => `${(n / 1000).toFixed(1)} kB`;
for (const row of rows.sort((a, b) => b.gzipped - a.gzipped)) {
  console.log(
    `  ${row.file.padEnd(40)} ${kb(row.raw).padStart(10)} raw ${kb(row.gzipped).padStart(10)} gzip`,
  );
}
const ratio = total / BUDGET;
console.log(
  `First load of the Dashboard (the landing page): ${kb(total)} gzipped JavaScript in ${rows.length} file(s); budget ${kb(BUDGET)}; ratio ${ratio.toFixed(3)}`,
);
if (ratio > 1) {
  console.error(`Over budget by ${kb(total - BUDGET)}.`);
  process.exit(1);
}
