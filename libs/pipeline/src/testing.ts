import type { MessageChain, QueryEnvelope } from '@conveyor/contracts';
import { parsePipelineConfig } from './config/load.js';
import type { PipelineDeps } from './engine/ports.js';
import { newQuery } from './engine/new-query.js';
import type { PipelineQuery } from './engine/query.js';

/** A query and recording deps for unit tests and benchmarks; no broker, database or Redis. */
export function testQuery(opts: { chain?: MessageChain; group?: boolean; config?: Record<string, unknown>; senderId?: string; launcherId?: string } = {}): PipelineQuery {
  const parsed = parsePipelineConfig(opts.config ?? {});
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  const envelope: QueryEnvelope = {
    v: 1,
    queryId: '00000000-0000-4000-8000-000000000001',
    receivedAt: '2026-01-05T08:00:00.000Z',
    route: {
      botId: 'bot-1', adapter: 'http-bot', sessionId: opts.launcherId ?? 's1', launcherType: opts.group ? 'group' : 'person',
      launcherId: opts.launcherId ?? 's1', senderId: opts.senderId ?? (opts.group ? 'u1' : (opts.launcherId ?? 's1')), replyTo: 'in_1',
    },
    senderName: 'Alice',
    ...(opts.group ? { groupName: 'Room' } : {}),
    messageChain: opts.chain ?? [{ type: 'Plain', text: 'hello' }],
  };
  return newQuery(envelope, { id: 'p1', stageNames: [], config: parsed.config, boundary: 0, mcpServers: 'all', plugins: 'all', skills: 'all' });
}

export interface Recorded {
  notices: MessageChain[];
  failures: string[];
  logs: Array<{ level: string; obj: object; msg: string }>;
}

export function recordingDeps(extra: Partial<PipelineDeps> = {}): { deps: PipelineDeps; rec: Recorded } {
  const rec: Recorded = { notices: [], failures: [], logs: [] };
  const log = (level: string) => (obj: object, msg: string) => void rec.logs.push({ level, obj, msg });
  const deps: PipelineDeps = {
    logger: { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') },
    notices: {
      userNotice: async (_q, m) => void rec.notices.push(m),
      markFailed: async (_q, e) => void rec.failures.push(e),
    },
    ...extra,
  };
  return { deps, rec };
}
