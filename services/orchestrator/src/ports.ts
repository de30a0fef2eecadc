import { LIMITS, RunRequest } from '@conveyor/contracts';
import type { RunEvents } from '@conveyor/message-state';
import type { Infra } from '@conveyor/service-kit';
import { ConversationStore, QueryLog } from '@conveyor/persistence';
import type { CommandPort, HandoffPort, HistoryPort, ModelInfoPort, NoticeSink, PipelineQuery, LeasePort } from '@conveyor/pipeline';
import type { SessionLeases } from '@conveyor/message-state';

// The orchestrator's adapters for the stage ports: Postgres for history and models, JetStream for the
// run hand-off and for the items and notices that travel to the dispatcher, Redis for leases.

export function historyPort(store: ConversationStore): HistoryPort {
  return {
    load: (q) => store.load(q.route, q.pipelineId, LIMITS.historyMessages),
  };
}

export function commandPort(store: ConversationStore): CommandPort {
  return {
    resetConversation: (q) => store.reset(q.route),
  };
}

/** Model abilities from the configuration read model: every chat asks, and they rarely change. */
export function modelInfoPort(infra: Infra): ModelInfoPort {
  return { abilities: (id) => infra.config.modelAbilities(id) };
}

export function leasePort(leases: SessionLeases): LeasePort {
  return {
    extend: async (q, ms) => void (await leases.extend(q.route, q.queryId, ms)),
  };
}

/** How long a hand-off keeps trying through a broker outage (same dedup id each time). */
const HOP_PUBLISH_RETRY_MS = 60_000;


/** Notices leave as text; the dispatcher adds the at-sender mention when it sends them. */
export function noticeSink(events: RunEvents, queryLog: QueryLog): NoticeSink {
  return {
    userNotice: (_q, chain) => events.emit({ kind: 'notice', text: chain.map((c) => (c.type === 'Plain' ? c.text : '')).join('') }),
    markFailed: async (q, error) => queryLog.failed(q.queryId, error),
  };
}

export function handoffPort(infra: Infra, onHandoff: () => void): HandoffPort {
  return {
    async startRun(q, run) {
      await infra.publisher.publish(infra.topology.subjects.run(q.route.botId), RunRequest, run, { msgId: `run:${q.queryId}`, queryId: q.queryId, retryForMs: HOP_PUBLISH_RETRY_MS });
      onHandoff();
    },
  };
}
