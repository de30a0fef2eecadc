// After a file apply, tell the running services which rows changed (`config.changed` on core NATS), so
// they drop their cached copies at once. Best effort: with NATS unreachable (first start, before the
// services run) there is nobody to tell, and the services' safety TTL bounds staleness otherwise.
import { connect } from '@nats-io/transport-node';
import { natsAuthFromEnv, natsServers, publishConfigChanged, redactUrl } from '@conveyor/bus';
import { topology, type ConfigChanged, type ConfigChangeKind } from '@conveyor/contracts';
import type { PrismaClient } from '@conveyor/persistence';
import type { ApplySummary } from '../index.js';

const CONNECT_TIMEOUT_MS = 2_000;

/** The changes of an apply as events, each with the row's version now (0: deleted). */
export async function configChangesOf(prisma: PrismaClient, summary: ApplySummary): Promise<ConfigChanged[]> {
  const touched = (c: ApplySummary['bots']) => [...c.created, ...c.updated, ...c.retired];
  const kinds: Array<[ConfigChangeKind, string[], (ids: string[]) => Promise<Array<{ id: string; version: number }>>]> = [
    ['model', touched(summary.models), (ids) => prisma.llmModel.findMany({ where: { id: { in: ids } }, select: { id: true, version: true } })],
    ['pipeline', touched(summary.pipelines), (ids) => prisma.pipeline.findMany({ where: { id: { in: ids } }, select: { id: true, version: true } })],
    ['mcp-server', touched(summary.mcpServers), (ids) => prisma.mcpServer.findMany({ where: { id: { in: ids } }, select: { id: true, version: true } })],
    ['bot', touched(summary.bots), (ids) => prisma.bot.findMany({ where: { id: { in: ids } }, select: { id: true, version: true } })],
    // A skill's revision, as the admin API announces it: runners drop their cached skill list.
    ['skill', touched(summary.skills), async (names) => (await prisma.skill.findMany({ where: { name: { in: names } }, select: { name: true, revision: true } })).map((r) => ({ id: r.name, version: r.revision }))],
  ];
  const events: ConfigChanged[] = [];
  for (const [kind, ids, versions] of kinds) {
    if (ids.length === 0) continue;
    const now = new Map((await versions(ids)).map((r) => [r.id, r.version]));
    for (const id of ids) events.push({ version: 1, kind, id, revision: now.get(id) ?? 0 });
  }
  return events;
}

/** Publishes the events; returns how many, or the reason nothing was published. */
export async function announceConfigChanges(events: ConfigChanged[], env: NodeJS.ProcessEnv = process.env): Promise<number | { skipped: string }> {
  if (events.length === 0) return 0;
  const url = env.NATS_URL || 'nats://127.0.0.1:4222';
  let nc;
  try {
    nc = await connect({ ...natsAuthFromEnv(env), servers: natsServers(url), name: 'setup', timeout: CONNECT_TIMEOUT_MS, maxReconnectAttempts: 0 });
  } catch (err) {
    return { skipped: `NATS not reachable at ${redactUrl(url)} (${(err as Error).message})` };
  }
  try {
    const subject = topology(env.CONVEYOR_SUBJECT_PREFIX || 'conveyor').subjects.configChanged;
    for (const event of events) publishConfigChanged(nc, subject, event);
    await nc.flush();
    return events.length;
  } finally {
    await nc.close();
  }
}
