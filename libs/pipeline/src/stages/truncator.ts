import type { LlmMessage } from '@conveyor/contracts';
import { CONTINUE } from '../engine/result.js';
import type { StageFactory } from '../engine/stage.js';

/** LangBot's round truncator: the last `maxRound` user turns and everything after the oldest of them. */
export function truncateRounds(messages: readonly LlmMessage[], maxRound: number): LlmMessage[] {
  const kept: LlmMessage[] = [];
  let rounds = 0;
  for (let i = messages.length - 1; i >= 0 && rounds < maxRound; i--) {
    kept.push(messages[i]);
    if (messages[i].role === 'user') rounds++;
  }
  kept.reverse();
  // Leading assistant or tool messages before the oldest kept user turn are cut.
  const firstUser = kept.findIndex((m) => m.role === 'user');
  return firstUser < 0 ? [] : kept.slice(firstUser);
}

export const conversationMessageTruncator: StageFactory = ({ name, config }) => ({
  name,
  process(q) {
    q.messages = truncateRounds(q.messages, config.ai['local-agent']['max-round']);
    return CONTINUE;
  },
});
