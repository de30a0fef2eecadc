import { CONTINUE, type Stage } from '@conveyor/pipeline';
import type { RunEvents } from '@conveyor/message-state';

/**
 * The orchestrator's last stage: each item MessageProcessor yields in place (a command or plugin reply) leaves
 * for the dispatcher, which runs the stages after MessageProcessor on it.
 */
export function forwardItems(events: RunEvents): Stage {
  return {
    name: 'ForwardToDispatcher',
    async process(q) {
      const item = q.respMessages.at(-1);
      if (item?.kind === 'command') {
        await events.emit({ kind: 'command_reply', text: item.text });
      } else if (item?.kind === 'plugin') {
        await events.emit({ kind: 'plugin_reply', chain: item.chain });
      }
      return CONTINUE;
    },
  };
}
