import { spawn } from 'node:child_process';
import { connect } from '@nats-io/transport-node';
import { percentile } from './stats.js';

const RESPONDER = `
import { connect } from '@nats-io/transport-node';
const nc = await connect({ servers: process.env.NATS_URL });
const sub = nc.subscribe(process.env.SUBJECT);
process.stdout.write('ready\\n');
for await (const m of sub) m.respond(m.data);
`;

/**
 * The floor every hop pays: a core NATS request/reply to a responder in another process, 1 KiB
 * payload, measured sequentially so it is a latency, not a throughput, figure.
 */
export async function natsRequestReplyP50(natsUrl: string, subject: string, samples = 2000): Promise<number> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', RESPONDER], {
    env: { ...process.env, NATS_URL: natsUrl, SUBJECT: subject },
    stdio: ['ignore', 'pipe', 'inherit'],
    cwd: new URL('..', import.meta.url).pathname,
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`responder exited ${code}`)));
  });
  const nc = await connect({ servers: natsUrl });
  try {
    const payload = new Uint8Array(1024);
    for (let i = 0; i < 200; i++) await nc.request(subject, payload, { timeout: 2000 });
    const times: number[] = [];
    for (let i = 0; i < samples; i++) {
      const t = performance.now();
      await nc.request(subject, payload, { timeout: 2000 });
      times.push(performance.now() - t);
    }
    return percentile(times, 50);
  } finally {
    await nc.close();
    child.kill();
  }
}
