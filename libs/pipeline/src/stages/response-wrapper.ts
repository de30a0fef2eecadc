import type { MessageChain } from '@conveyor/contracts';
import { messageText } from '@conveyor/contracts';
import type { PipelineQuery } from '../engine/query.js';
import { proceed, type StageResult } from '../engine/result.js';
import type { StageFactory } from '../engine/stage.js';
import type { PipelineDeps } from '../engine/ports.js';
import { interrupt } from '../engine/result.js';
import { plain } from '../text/chain.js';
import { emitNormalMessageResponded } from '../plugins/events.js';

/**
 * LangBot's ResponseWrapper, a generator nested inside MessageProcessor's fan-out. Command replies
 * get the `[bot] ` prefix; assistant text becomes a chain; tool calls become `Call a.b...`, sent only
 * with track-function-calls; tool, system and user items yield nothing. `remove-think` is not applied
 * here, as in LangBot: the runner applies it (the run request carries it).
 */
export const responseWrapper: StageFactory = ({ name, config, deps }) => ({
  name,
  process(q) {
    return wrap(q, config.output.misc['track-function-calls'], deps);
  },
});

async function* wrap(q: PipelineQuery, trackCalls: boolean, deps: PipelineDeps): AsyncGenerator<StageResult> {
  const r = q.respMessages.at(-1);
  if (!r) return;
  const push = (chain: MessageChain) => q.respMessageChain.push(chain);
  if (r.kind === 'plugin') {
    push(r.chain);
    yield proceed();
    return;
  }
  if (r.kind === 'command') {
    push(plain(`[bot] ${r.text}`));
    yield proceed();
    return;
  }
  let text: string;
  let toolNames: string[];
  let finalChunk = false;
  if (r.kind === 'chunk') {
    text = r.text;
    toolNames = r.hasToolCalls ? r.toolNames : [];
    finalChunk = r.isFinal && !r.hasToolCalls;
  } else {
    if (r.message.role !== 'assistant') return;
    text = messageText(r.message);
    toolNames = (r.message.tool_calls ?? []).map((c) => c.function.name);
  }
  if (text) {
    // Plugins may hold this text back (INTERRUPT ends only this item) or send their own chain instead.
    const plugins = await emitNormalMessageResponded(q, deps, text, toolNames);
    if (plugins.preventDefault && finalChunk) {
      // LangBot interrupts here and a streamed reply is never closed; the text is held back, but the
      // platform still gets the reply's final part.
      push([]);
      yield proceed();
    } else if (plugins.preventDefault) yield interrupt();
    else {
      push(plugins.replyMessageChain ?? plain(text));
      yield proceed();
    }
  } else if (finalChunk) {
    // A final chunk without text still closes the streamed reply.
    push([]);
    yield proceed();
  }
  if (toolNames.length > 0 || (r.kind === 'chunk' && r.hasToolCalls)) {
    const call = plain(`Call ${toolNames.join('.')}...`);
    push(call);
    if (trackCalls) {
      const plugins = await emitNormalMessageResponded(q, deps, `Call ${toolNames.join('.')}...`, toolNames);
      if (plugins.preventDefault) yield interrupt();
      else {
        push(plugins.replyMessageChain ?? call);
        yield proceed();
      }
    }
  }
}
