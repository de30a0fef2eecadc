import { createPrismaClient } from '@conveyor/persistence';
import type { ChatRequestBody } from '../fakes/index.js';
import type { FuzzSystem } from './fuzz-system.js';
import { deadService } from './fuzz-system.js';
import { forEachLimit, type CategoryReport } from './report.js';
import { waitUntil } from '../harness/wait.js';

/** The pipeline's `output.misc.failure-hint` (LangBot's default): what the user sees when a run fails. */
export const FAILURE_HINT = 'Request failed.';

/** One HTTP-bot message a category sent to make the model (and what it calls) run. */
export interface SentRun {
  session: string;
  replyTo: string;
  /** The case, for the report. */
  input: string;
  /** The run must end with its answer: a failure notice does not do (a tool's failure, say, is the model's to handle). */
  mustAnswer?: boolean;
}

/**
 * Case markers in the user's text route the fake model's answer to a case: `<kind>-<index>-<tag>`,
 * the tag unique to the category's run.
 */
export function caseMarker(kind: string, tag: string) {
  const pattern = new RegExp(`${kind}-(\\d+)-(\\w+)`);
  return {
    text: (i: number) => `${kind}-${i}-${tag}`,
    /** The case index the request's last user message names, or undefined. */
    find(body: ChatRequestBody): number | undefined {
      const user = [...(body.messages ?? [])].reverse().find((m) => m.role === 'user');
      const found = pattern.exec(JSON.stringify(user?.content ?? ''));
      return found && found[2] === tag ? Number(found[1]) : undefined;
    },
  };
}

/** The fake model's answer to a message of no case: an echo, cut short (some inputs are megabytes). */
export function shortEcho(body: ChatRequestBody): { text: string } {
  return { text: `Echo: ${JSON.stringify(body.messages?.findLast((m) => m.role === 'user')?.content ?? '').slice(0, 200)}` };
}

/** Whether the request is a later round of its turn: a tool result after the last user message. */
export function isLaterRound(body: ChatRequestBody): boolean {
  const messages = body.messages ?? [];
  const lastUser = messages.findLastIndex((m) => m.role === 'user');
  return messages.slice(lastUser + 1).some((m) => m.role === 'tool' || (m.role === 'assistant' && Array.isArray(m.tool_calls)));
}

/** Posts one HTTP-bot message per entry and returns the accepted ones; a refusal is a failure. */
export async function postRuns(fuzz: FuzzSystem, report: CategoryReport, messages: (Omit<SentRun, 'replyTo'> & { text: string })[], concurrency = 4): Promise<SentRun[]> {
  const sent: SentRun[] = [];
  await forEachLimit(messages, concurrency, async ({ text, ...run }) => {
    const res = await fuzz.sys.post({ session_id: run.session, message: [{ type: 'Plain', text }] });
    if (res.status !== 202) {
      report.failures.push({ problem: `ingress answered ${res.status}: ${(await res.text()).slice(0, 200)}`, input: run.input });
      return;
    }
    sent.push({ ...run, replyTo: ((await res.json()) as { data: { accepted_message_id: string } }).data.accepted_message_id });
  });
  return sent;
}

/**
 * Waits for every run to end and checks each: its query ended (`succeeded` or `failed`) within the
 * deadline; it got at most one final callback; and it got one, or (unless it must answer) failed with
 * the failure hint shown (after streamed parts LangBot sends that notice non-final). Sessions are named
 * `<sessionPrefix>…`; a session may carry several runs. Ends with a failure when a service died.
 */
export async function judgeRuns(fuzz: FuzzSystem, report: CategoryReport, runs: SentRun[], sessionPrefix: string, deadlineMs = 180_000): Promise<void> {
  const { sys } = fuzz;
  const expected = new Map<string, number>();
  for (const r of runs) expected.set(r.session, (expected.get(r.session) ?? 0) + 1);
  const ended = new Map<string, { status: string; error: string | null }[]>();
  const allEnded = (session: string) => (ended.get(session)?.length ?? 0) >= (expected.get(session) ?? 0);
  const prisma = createPrismaClient(sys.db.url);
  try {
    await waitUntil('every run to end', async () => {
      const rows = await prisma.queryRecord.findMany({ where: { botId: sys.botId, launcherId: { startsWith: sessionPrefix }, status: { in: ['succeeded', 'failed'] } }, select: { launcherId: true, status: true, error: true } });
      ended.clear();
      for (const r of rows) ended.set(r.launcherId, [...(ended.get(r.launcherId) ?? []), { status: r.status, error: r.error }]);
      return [...expected.keys()].every(allEnded) || deadService(fuzz) !== undefined;
    }, deadlineMs, 500).catch(() => undefined);
  } finally {
    await prisma.$disconnect();
  }
  // The last parts go out after the query is recorded as ended.
  const replies = (replyTo: string) => sys.callbacks.received.filter((c) => c.json?.reply_to === replyTo);
  const finals = (replyTo: string) => replies(replyTo).filter((c) => c.json?.is_final === true).length;
  const hinted = (replyTo: string) => replies(replyTo).some((c) => JSON.stringify(c.json?.message ?? '').includes(FAILURE_HINT));
  await waitUntil('the last parts', () => runs.every((r) => !allEnded(r.session) || finals(r.replyTo) > 0 || hinted(r.replyTo)), 30_000, 250).catch(() => undefined);
  // A moment for any second final part to show up.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  for (const run of runs) {
    const records = ended.get(run.session) ?? [];
    if (!allEnded(run.session)) {
      report.failures.push({ problem: 'the run did not end', input: run.input });
      continue;
    }
    const n = finals(run.replyTo);
    const failed = records.some((r) => r.status === 'failed');
    const seen = replies(run.replyTo).map((c) => `#${c.json?.sequence}${c.json?.is_final ? ' final' : ''}${c.json?.stream ? ' stream' : ''}: ${JSON.stringify(c.json?.message ?? null).slice(0, 80)}`).join(' | ');
    const states = records.map((r) => `${r.status}${r.error ? ` (${r.error.slice(0, 150)})` : ''}`).join(', ');
    if (n > 1) report.failures.push({ problem: `${n} final callbacks`, input: `${run.input}\n      callbacks: ${seen}` });
    else if (run.mustAnswer && (n === 0 || hinted(run.replyTo))) {
      report.failures.push({ problem: `no answer, the session's queries ${states}`, input: `${run.input}\n      callbacks: ${seen || 'none'}` });
    } else if (n === 0 && !(failed && hinted(run.replyTo))) {
      report.failures.push({ problem: `query ${states} with neither a final reply nor the failure hint`, input: `${run.input}\n      callbacks: ${seen || 'none'}` });
    }
  }
  const dead = deadService(fuzz);
  if (dead) report.failures.push({ problem: 'a service died', input: dead });
}
