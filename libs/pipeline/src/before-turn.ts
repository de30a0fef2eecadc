import type { PipelineStageName } from './defaults.js';
import { executeFrom } from './engine/execute.js';
import type { NoticeSink, PipelineDeps } from './engine/ports.js';
import type { PipelineQuery } from './engine/query.js';
import type { Stage } from './engine/stage.js';
import { instantiate, type PipelineDefinition } from './pipeline.js';

/**
 * The stages a query may run before it takes its session's turn. They decide from the message and the
 * pipeline's settings alone (no session state, no history, no plugin) and tell the user nothing: a
 * message they drop is dropped silently. So when they run changes nothing anyone sees, and run first
 * they let a message they drop (a group message not addressed to the bot, a sender access control
 * refuses) end at once, instead of waiting behind the session's reply in progress for a turn, a
 * pipeline slot and a rate window count it would give back.
 */
const BEFORE_TURN: readonly PipelineStageName[] = ['GroupRespondRuleCheckStage', 'BanSessionCheckStage'];
export const STAGES_BEFORE_TURN: ReadonlySet<string> = new Set<string>(BEFORE_TURN);

/** How many of the pipeline's first stages may run before the turn: those of STAGES_BEFORE_TURN that lead its stage list. */
export function stagesBeforeTurn(def: PipelineDefinition): number {
  let n = 0;
  for (const name of def.stageNames.slice(0, def.boundary)) {
    if (!STAGES_BEFORE_TURN.has(name)) break;
    n++;
  }
  return n;
}

export type BeforeTurn =
  /** A stage dropped the message: the query ends here and never takes a turn. */
  | { kind: 'dropped' }
  /** The query goes on in its turn from stage `from`, as the stages before it left the query. */
  | { kind: 'go-on'; from: number }
  /**
   * Something the early run does not expect (a stage failed, or asked to tell the user something):
   * the query runs every stage in its turn, from a fresh query, where such outcomes are handled.
   */
  | { kind: 'in-turn'; reason: string };

/** Refused before the turn: a notice must go out in the session's order, which only the turn keeps. */
const refuseNotices: NoticeSink = {
  userNotice: async () => {
    throw new Error('a stage before the turn asked to notify the user');
  },
  markFailed: async () => {
    throw new Error('a stage before the turn reported an error');
  },
};

/**
 * Runs the pipeline's stages before the turn (`stagesBeforeTurn`) on `query`; `timed` wraps them as
 * the turn's stages are (the query's timeline). They get `deps` with a notice sink of their own that
 * refuses: a stage here has nothing to tell anyone.
 */
export async function runBeforeTurn(
  def: PipelineDefinition,
  query: PipelineQuery,
  deps: Omit<PipelineDeps, 'notices'>,
  timed: (stages: Stage[]) => Stage[] = (stages) => stages,
): Promise<BeforeTurn> {
  const count = stagesBeforeTurn(def);
  if (count === 0) return { kind: 'go-on', from: 0 };
  const early: PipelineDeps = { ...deps, notices: refuseNotices };
  try {
    const ran = await executeFrom(timed(instantiate(def, early, 0, count)), 0, query, early);
    return ran === 'interrupted' ? { kind: 'dropped' } : { kind: 'go-on', from: count };
  } catch (err) {
    return { kind: 'in-turn', reason: err instanceof Error ? err.message : String(err) };
  }
}
