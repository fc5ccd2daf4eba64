import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { toDetail } from '../src/api/mapping.js';
import { openStore } from '../src/store/index.js';

const dir = process.argv[2]!;
const store = await openStore({ dataDir: dir, synchronous: 'NORMAL' });
const mb = () => (process.memoryUsage().rss / 1048576).toFixed(0);
let peak = 0;
const iv = setInterval(() => {
  peak = Math.max(peak, process.memoryUsage().rss);
}, 20);
console.log('start', mb());
async function* json() {
  for await (const rows of store.calls.scan({}, 100))
    yield rows.map((r) => JSON.stringify(toDetail(r))).join(',\n');
}
const mode = process.argv[3];
if (mode === 'plain') {
  let n = 0;
  for await (const s of json()) n += s.length;
  console.log('chars', n);
} else {
  let n = 0;
  await pipeline(
    Readable.from(json(), { objectMode: false }),
    new Writable({
      write(c, e, cb) {
        n += c.length;
        setImmediate(cb);
      },
    }),
  );
  console.log('bytes', n);
}
clearInterval(iv);
console.log('peak', (peak / 1048576).toFixed(0), 'end', mb());
await store.close();
