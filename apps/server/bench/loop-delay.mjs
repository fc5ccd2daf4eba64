// Loaded into the server by bench/search-load.mjs (node --import): the main thread's event-loop
// delay, written to BENCH_LOOP_DELAY_FILE (and reset) on each SIGWINCH (close-with-grace takes
// SIGUSR2), so that the bench can say how long the endpoints' thread was held, apart from what
// the clients' side adds. On Linux also the thread's CPU time and how often the kernel took the
// CPU from it (involuntary context switches), to tell a blocked loop from a starved one.
import fs from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const file = process.env.BENCH_LOOP_DELAY_FILE;

/** This thread's CPU time (ms) and involuntary context switches, from /proc (Linux). */
function threadCounters() {
  try {
    const stat = fs.readFileSync('/proc/thread-self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    const status = fs.readFileSync('/proc/thread-self/status', 'utf8');
    const preempted = Number(/nonvoluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0);
    return { cpuMs: ticks * 10, preempted };
  } catch {
    return { cpuMs: 0, preempted: 0 };
  }
}

if (file) {
  const histogram = monitorEventLoopDelay({ resolution: 5 });
  histogram.enable();
  let sequence = 0;
  let since = { at: performance.now(), ...threadCounters() };
  process.on('SIGWINCH', () => {
    sequence++;
    const now = { at: performance.now(), ...threadCounters() };
    const ms = (ns) => Math.round(ns / 1e4) / 100;
    fs.writeFileSync(
      file,
      JSON.stringify({
        sequence,
        p50: ms(histogram.percentile(50)),
        p99: ms(histogram.percentile(99)),
        max: ms(histogram.max),
        // Share of the interval the main thread spent on a CPU, and times it was preempted.
        cpu: Math.round(((now.cpuMs - since.cpuMs) / (now.at - since.at)) * 100),
        preempted: now.preempted - since.preempted,
      }),
    );
    histogram.reset();
    since = now;
  });
}
