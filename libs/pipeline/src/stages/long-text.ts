import { existsSync } from 'node:fs';
import type { MessageChain } from '@conveyor/contracts';
import type { PipelineQuery } from '../engine/query.js';
import { CONTINUE, interrupt } from '../engine/result.js';
import type { StageFactory } from '../engine/stage.js';
import { chainText, pyLen } from '../text/chain.js';
import { PNG_LIMITS, pngRenderer } from '../text/render-png.js';

export function forwardChain(text: string, botAccountId: string): MessageChain {
  return [{
    type: 'Forward',
    display: { title: 'Group chat history', brief: '[Chat history]', source: 'Chat history', preview: [`User: ${text}`], summary: 'View 1 forwarded message' },
    node_list: [{ sender_id: botAccountId, sender_name: 'User', message_chain: [{ type: 'Plain', text }], message_id: 0 }],
  }];
}

/**
 * LangBot's LongTextProcessStage. In streaming, a reply over the threshold is converted once: its
 * intermediate chunks are held back (the branch ends quietly) and the final chunk carries the forward
 * or image, where LangBot renders a new one for every chunk.
 *
 * `image` renders a PNG (text/render-png.ts) with `font-path`, or with the packaged Noto Sans CJK SC
 * when it is empty, where LangBot has no font and switches to forward. A font-path that does not
 * exist switches to forward, as LangBot does off Windows. Past the renderer's limits (100,000
 * characters, 256 lines, 8 M pixels, 10 MiB) the reply goes as a forward; other render errors
 * propagate and abort the query, as LangBot's do.
 */
export const longTextProcess: StageFactory = ({ name, config, deps }) => {
  const lt = config.output['long-text-processing'];
  const fontPath = lt['font-path'];
  const renderer = deps.renderer ?? pngRenderer;
  let strategy = lt.strategy;
  if (strategy === 'image' && fontPath && !existsSync(fontPath)) {
    deps.logger.warn({ fontPath }, 'long-text font-path does not exist; using forward');
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
      if (strategy === 'image') {
        const png = pyLen(text) <= PNG_LIMITS.maxChars ? await renderer.render(text, fontPath) : null;
        if (png) converted = [{ type: 'Image', image_id: '', url: '', path: '', base64: png }];
        else deps.logger.warn({ chars: pyLen(text) }, 'long text over the image limits; using forward');
      }
      q.respMessageChain[q.respMessageChain.length - 1] = converted ?? forwardChain(text, q.botAccountId);
      return CONTINUE;
    },
  };
};
