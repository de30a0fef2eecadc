import { randomUUID } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { RunRequest } from '@conveyor/contracts';
import { BusPublisher } from '@conveyor/bus';
import { NATS_URL, type TestSystem } from '../harness/system.js';
import type { ReceivedCallback } from '../fakes/callback-receiver.js';

/**
 * Runner tests publish run requests themselves (as the orchestrator does), so they can choose
 * streaming, runners and tool bindings independently of the pipeline engine.
 */
export class RunPublisher {
  private constructor(
    private readonly nc: NatsConnection,
    private readonly publisher: BusPublisher,
    private readonly sys: TestSystem,
  ) {}

  static async open(sys: TestSystem): Promise<RunPublisher> {
    const nc = await connect({ servers: NATS_URL });
    return new RunPublisher(nc, new BusPublisher(jetstream(nc)), sys);
  }

  request(overrides: Partial<RunRequest> = {}): RunRequest {
    const queryId = randomUUID();
    return {
      v: 1,
      queryId,
      pipelineId: 'default',
      route: { botId: this.sys.botId, adapter: 'http-bot', sessionId: `s-${queryId.slice(0, 8)}`, launcherType: 'person', launcherId: 'u1', senderId: 'u1', replyTo: `in_${queryId.replace(/-/g, '')}` },
      conversationId: randomUUID(),
      model: { primary: 'fake', fallbacks: [] },
      stream: true,
      messages: [{ role: 'user', content: 'hello' }],
      exceptionHandling: 'show-hint',
      failureHint: 'Request failed.',
      ...overrides,
    };
  }

  async publish(run: RunRequest): Promise<RunRequest> {
    await this.publisher.publish(this.sys.topology.subjects.run(run.route.botId), RunRequest, run, { msgId: `run:${run.queryId}`, queryId: run.queryId });
    return run;
  }

  close(): Promise<void> {
    return this.nc.close();
  }
}

/** The callbacks answering one run, in arrival order. */
export function repliesTo(all: ReceivedCallback[], run: RunRequest): ReceivedCallback[] {
  return all.filter((c) => c.json?.reply_to === run.route.replyTo);
}

export function replyText(c: ReceivedCallback): string {
  return (c.json?.message ?? []).map((p: { text?: string }) => p.text ?? '').join('');
}
