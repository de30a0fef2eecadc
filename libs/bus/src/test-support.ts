/**
 * Helpers for this package's tests (and other packages' integration tests): a real NATS connection,
 * a topology under a fresh random prefix, and cleanup of its streams. Not part of the public API.
 */
import { randomBytes } from 'node:crypto';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { topology, type Topology } from '@conveyor/contracts';
import { connectBus } from './connect.js';
import type { BusLogger } from './logger.js';

export const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

export function randomPrefix(): string {
  return 't' + randomBytes(5).toString('hex');
}

export interface TestBus {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  topo: Topology;
  /** Deletes every stream of the topology and closes the connection. */
  cleanup(): Promise<void>;
}

/** A connection plus a topology under `prefix` (default: a fresh random one). */
export async function testBus(name = 'bus-test', prefix = randomPrefix()): Promise<TestBus> {
  const nc = await connectBus({ url: NATS_URL, name });
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const topo = topology(prefix);
  return {
    nc,
    js,
    jsm,
    topo,
    async cleanup() {
      for (const s of Object.values(topo.streams)) {
        try {
          await jsm.streams.delete(s.name);
        } catch {
          // not created by this test
        }
      }
      await nc.drain();
    },
  };
}

export async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(25);
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function streamMessages(jsm: JetStreamManager, stream: string): Promise<number> {
  return (await jsm.streams.info(stream)).state.messages;
}

/** A logger that keeps what it was given, for assertions. */
export function memoryLogger(): BusLogger & { lines: Array<{ level: string; obj: object; msg?: string }> } {
  const lines: Array<{ level: string; obj: object; msg?: string }> = [];
  const at = (level: string) => (obj: object, msg?: string) => void lines.push({ level, obj, msg });
  return { lines, info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') };
}
