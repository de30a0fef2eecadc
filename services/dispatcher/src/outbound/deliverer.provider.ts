import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { replyEventGapMs, SentNotice } from '@conveyor/contracts';
import { Deliverer, type BotConfigs } from '@conveyor/delivery';
import { platforms } from '@conveyor/platforms';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { DEFAULT_LEASE_OPTIONS, SessionLeases } from '@conveyor/message-state';
import { meter } from '@conveyor/telemetry';

const sent = meter.createCounter('conveyor_dispatch_parts_sent', { description: 'Reply parts handed to a platform' });
const coalesced = meter.createCounter('conveyor_dispatch_parts_coalesced', { description: 'Streamed snapshots skipped because a newer one was waiting' });
const failed = meter.createCounter('conveyor_dispatch_parts_failed', { description: 'Reply parts the platform did not take after all retries' });
const skipped = meter.createCounter('conveyor_dispatch_events_lost', { description: 'Reply events or whole replies given up as lost after their gap or stall bound' });
const interleaved = meter.createCounter('conveyor_dispatch_replies_interleaved', {
  description: "Reply batches numbered above their own earlier callbacks because another reply of the session changed its count (replies side by side after Redis lost a session's turn)",
});

/** Builds the one Deliverer of this replica with every registered platform's outbound adapter (by `route.adapter`). */
export function createDeliverer(infra: Infra): Deliverer {
  const configs: BotConfigs = { get: (botId) => infra.config.bot(botId) };
  const queryLog = infra.queryLog;
  // The session's next message may start once this reply's last event is in Redis: its parts go out
  // before the next reply's. Storing it ends the turn in the same step where the server holds every
  // slot (`sessions`); elsewhere taking it for sending does (`onReplyEnded`).
  const leases = new SessionLeases(infra.redis, infra.topology.prefix, DEFAULT_LEASE_OPTIONS, infra.keyLayout);
  return new Deliverer({
    redis: infra.redis,
    prefix: infra.topology.prefix,
    logger: infra.logger,
    gapMs: replyEventGapMs(infra.topology),
    adapters: platforms.all().map((p) => p.outbound({ redis: infra.redis, prefix: infra.topology.prefix, topology: infra.topology, nc: infra.nc, configs, logger: infra.logger })),
    onPermanentFailure: async (queryId, reason) => queryLog.failed(queryId, reason),
    onReplyEnded: async (route, queryId) => void (await leases.finish(route, queryId)),
    sessions: leases,
    // Best effort (core NATS): a notice that does not arrive leaves the handling replica asking Redis.
    announceSent: (events) => infra.nc.publish(infra.topology.subjects.dispatchSent, JSON.stringify({ v: 1, events } satisfies SentNotice)),
  });
}

@Injectable()
export class DelivererProvider implements OnModuleInit, OnApplicationShutdown {
  readonly deliverer: Deliverer;
  private metricsTimer: NodeJS.Timeout | undefined;
  private last = { sent: 0, coalesced: 0, failed: 0, skipped: 0, interleaved: 0 };
  private sentNotices: { unsubscribe(): void } | undefined;

  constructor(@Inject(INFRA) private readonly infra: Infra) {
    this.deliverer = createDeliverer(infra);
  }

  onModuleInit() {
    this.deliverer.start();
    this.sentNotices = this.infra.nc.subscribe(this.infra.topology.subjects.dispatchSent, {
      callback: (err, msg) => {
        if (err) return;
        let json: unknown;
        try {
          json = msg.json();
        } catch {
          json = undefined;
        }
        const notice = SentNotice.safeParse(json);
        if (notice.success) this.deliverer.sentElsewhere(notice.data.events);
        else this.infra.logger.warn({ subject: msg.subject, bytes: msg.data.byteLength }, 'ignoring a malformed sent notice');
      },
    });
    this.metricsTimer = setInterval(() => {
      const s = this.deliverer.stats;
      sent.add(s.sent - this.last.sent);
      coalesced.add(s.coalesced - this.last.coalesced);
      failed.add(s.failed - this.last.failed);
      skipped.add(s.skipped - this.last.skipped);
      interleaved.add(s.interleaved - this.last.interleaved);
      this.last = { sent: s.sent, coalesced: s.coalesced, failed: s.failed, skipped: s.skipped, interleaved: s.interleaved };
    }, 5_000);
    this.metricsTimer.unref();
  }

  async onApplicationShutdown() {
    if (this.metricsTimer) clearInterval(this.metricsTimer);
    this.sentNotices?.unsubscribe();
    await this.deliverer.stop(5_000);
  }
}
