// A real NATS connection and a topology under a fresh prefix, with cleanup of its streams.
import { randomBytes } from 'node:crypto';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { topology, type Topology } from '@conveyor/contracts';

export const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

/** A name no other test run uses, for stream, subject and key prefixes. */
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
  const nc = await connect({ servers: NATS_URL, name, maxReconnectAttempts: -1 });
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

export async function streamMessages(jsm: JetStreamManager, stream: string): Promise<number> {
  return (await jsm.streams.info(stream)).state.messages;
}
