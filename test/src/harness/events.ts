import { randomUUID } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import type { ReplyRoute, Topology } from '@conveyor/contracts';
import { natsServers } from '@conveyor/bus';
import { NATS_URL } from './system.js';

/** Publishes runner events straight onto the events stream, as a runner would (same msg ids). */
export class EventPublisher {
  private constructor(private readonly nc: NatsConnection, private readonly topo: Topology) {}

  static async connect(topo: Topology): Promise<EventPublisher> {
    return new EventPublisher(await connect({ servers: natsServers(NATS_URL) }), topo);
  }

  async publish(route: ReplyRoute, queryId: string, attempt: number, seq: number, body: Record<string, unknown>): Promise<void> {
    const js = jetstream(this.nc);
    const event = { v: 1, queryId, route, attempt, seq, ...body };
    await js.publish(this.topo.subjects.event(route.botId), JSON.stringify(event), { msgID: `evt:${queryId}:${attempt}:${seq}` });
  }

  /** A whole streamed reply: cumulative chunks, the final one, then done. Returns the full text. */
  async streamReply(route: ReplyRoute, queryId: string, words: string[], opts: { gapMs?: number; onChunk?: (i: number) => Promise<void> } = {}): Promise<string> {
    let text = '';
    let seq = 0;
    for (let i = 0; i < words.length; i++) {
      text += (i ? ' ' : '') + words[i];
      await this.publish(route, queryId, 1, seq++, { kind: 'chunk', text, isFinal: i === words.length - 1, hasToolCalls: false });
      await opts.onChunk?.(i);
      if (opts.gapMs) await new Promise((r) => setTimeout(r, opts.gapMs));
    }
    await this.publish(route, queryId, 1, seq++, { kind: 'done' });
    return text;
  }

  close() {
    return this.nc.close();
  }
}

export function route(botId: string, sessionId: string, adapter: ReplyRoute['adapter'] = 'http-bot', launcherType: ReplyRoute['launcherType'] = 'person'): ReplyRoute {
  return { botId, adapter, sessionId, launcherType, launcherId: sessionId, senderId: sessionId, replyTo: `in_${randomUUID().replaceAll('-', '')}` };
}
