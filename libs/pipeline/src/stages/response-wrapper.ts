import type { MessageChain } from '@conveyor/contracts';
import { messageText, type ChatAttachment } from '@conveyor/contracts';
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

/** Outbox files as LangBot sends them: images as `Image` with a data URI, anything else as `File` with raw base64. */
export function attachmentChain(files: readonly ChatAttachment[]): MessageChain {
  return files.map((f) => f.mime.startsWith('image/')
    ? { type: 'Image' as const, image_id: '', url: '', path: '', base64: `data:${f.mime};base64,${f.base64}` }
    : { type: 'File' as const, id: '', name: f.name, size: Math.floor((f.base64.length * 3) / 4), url: '', path: '', base64: f.base64 });
}

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
  // The agent's outbox files go with the answer (LangBot appends them to the final assistant message).
  // Only an answer with files builds a chain for them: most chunks carry none.
  const files = r.attachments?.length ? attachmentChain(r.attachments) : undefined;
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
      const chain = plugins.replyMessageChain ?? plain(text);
      push(files ? [...chain, ...files] : chain);
      yield proceed();
    }
  } else if (finalChunk || files) {
    // A final chunk without text still closes the streamed reply (with the outbox files, if any).
    push(files ?? []);
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
