import { need } from '../engine/ports.js';
import { isGroup } from '../engine/query.js';
import { CONTINUE } from '../engine/result.js';
import type { StageFactory } from '../engine/stage.js';

/** The platform did not take the reply after the adapter's own retries; LangBot re-raises, aborting the query. */
export class DeliveryError extends Error {
  override readonly name = 'DeliveryError';
}

/** LangBot's SendResponseBackStage: force-delay, at-sender, then a chunk update or a whole reply. */
export const sendResponseBack: StageFactory = ({ name, config, deps }) => ({
  name,
  async process(q) {
    const out = config.output;
    const [min, max] = [out['force-delay'].min, out['force-delay'].max];
    if (max > 0) {
      const seconds = min + (deps.random ?? Math.random)() * Math.max(0, max - min);
      await (deps.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms))))(seconds * 1000);
    }
    const chain = [...(q.respMessageChain.at(-1) ?? [])];
    if (out.misc['at-sender'] && isGroup(q)) chain.unshift({ type: 'At', target: q.route.senderId, display: '' });
    const item = q.respMessages.at(-1);
    const stream = q.streamOutput && q.respMessages.some((m) => m.kind === 'chunk');
    // On the chunk path the adapter marks a chunk final only if it ends the reply (no tool calls).
    const isFinal = stream ? item?.kind === 'chunk' && item.isFinal && !item.hasToolCalls : true;
    const result = await need(deps, 'outbound', name).send(q.route, { message: chain, isFinal, stream });
    if (!result.delivered) throw new DeliveryError(result.reason);
    return CONTINUE;
  },
});
