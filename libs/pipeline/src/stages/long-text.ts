import { existsSync } from 'node:fs';
import type { MessageChain } from '@conveyor/contracts';
import type { PipelineQuery } from '../engine/query.js';
import { CONTINUE, interrupt } from '../engine/result.js';
import type { StageFactory } from '../engine/stage.js';
import { chainText, pyLen } from '../text/chain.js';

/** Over this many characters the image strategy falls back to forward, as LangBot's does. */
const IMAGE_MAX_CHARS = 100_000;

export function forwardChain(text: string, botAccountId: string): MessageChain {
  return [{
    type: 'Forward',
    display: { title: 'Group chat history', brief: '[Chat history]', source: 'Chat history', preview: [`User: ${text}`], summary: 'View 1 forwarded message' },
    node_list: [{ sender_id: botAccountId, sender_name: 'User', message_chain: [{ type: 'Plain', text }], message_id: 0 }],
  }];
}

/**
 * LongTextProcessStage (spec 8.9). In streaming, a reply over the threshold is converted once: its
 * intermediate chunks are held back (the branch ends quietly) and the final chunk carries the forward
 * or image, where LangBot renders a new one for every chunk.
 */
export const longTextProcess: StageFactory = ({ name, config, deps }) => {
  const lt = config.output['long-text-processing'];
  let strategy = lt.strategy;
  if (strategy === 'image' && (!deps.renderer || !lt['font-path'] || !existsSync(lt['font-path']))) {
    deps.logger.warn({ fontPath: lt['font-path'] }, 'long-text image strategy without a usable font; using forward');
    strategy = 'forward';
  }
  return {
    name,
    async process(q: PipelineQuery) {
      const last = q.respMessageChain.at(-1);
      if (strategy === 'none' || !last || last.length === 0 || last.some((c) => c.type !== 'Plain')) return CONTINUE;
      const text = chainText(last);
      if (pyLen(text) <= lt.threshold) return CONTINUE;
      const item = q.respMessages.at(-1);
      if (item?.kind === 'chunk' && !(item.isFinal && !item.hasToolCalls)) return interrupt();
      let converted: MessageChain | null = null;
      if (strategy === 'image' && pyLen(text) <= IMAGE_MAX_CHARS) {
        const png = await deps.renderer!.render(text, lt['font-path']);
        if (png) converted = [{ type: 'Image', image_id: '', url: '', path: '', base64: png }];
      }
      q.respMessageChain[q.respMessageChain.length - 1] = converted ?? forwardChain(text, q.botAccountId);
      return CONTINUE;
    },
  };
};
