// npm run bench -- [messages=10000] [concurrency=64] [sequential=500]
//
// The end-to-end benchmark three times (tracing off, sampled at 0.1 with a local OTLP receiver, and at
// 1.0), one after another on a quiet machine, printed as one table.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const [messages = '10000', concurrency = '64', sequential = '500'] = process.argv.slice(2);
const e2e = fileURLToPath(new URL('./e2e.js', import.meta.url));

interface Result {
  tracing: string;
  messages: number;
  failures: number;
  duplicatedFinals: number;
  lost: number;
  natsP50: number;
  p50: number;
  p99: number;
  throughput: number;
  cpuPerMessage: Record<string, number>;
  cpuTotal: number;
}

const results: Result[] = [];
for (const tracing of ['off', '0.1', '1.0']) {
  console.error(`bench: e2e with tracing ${tracing} ...`);
  const run = spawnSync(process.execPath, [e2e, messages, concurrency, sequential, `--tracing=${tracing}`], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const line = run.stdout.split('\n').find((l) => l.startsWith('RESULT '));
  if (run.status !== 0 || !line) {
    console.error(run.stdout, run.stderr);
    process.exit(1);
  }
  results.push(JSON.parse(line.slice('RESULT '.length)) as Result);
}

const ms = (n: number) => n.toFixed(2);
const cpu = (r: Result, name: string) => ms(r.cpuPerMessage[name] ?? NaN);
console.log(`\n| tracing | messages | failed / lost / duplicated finals | throughput (msg/s, ${concurrency} senders) | p50 one at a time (ms) | p99 (ms) | ratio to NATS req/reply p50 | CPU ms/msg ingress | orchestrator | runner | dispatcher | total |`);
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const r of results) {
  console.log(`| ${r.tracing} | ${r.messages} | ${r.failures} / ${r.lost} / ${r.duplicatedFinals} | ${r.throughput.toFixed(0)} | ${ms(r.p50)} | ${ms(r.p99)} | ${(r.p50 / r.natsP50).toFixed(1)}x | ${cpu(r, 'ingress')} | ${cpu(r, 'orchestrator')} | ${cpu(r, 'runner')} | ${cpu(r, 'dispatcher')} | ${ms(r.cpuTotal)} |`);
}
