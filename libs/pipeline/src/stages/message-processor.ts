import type { RunRequest } from '@conveyor/contracts';
import { need, type PipelineDeps } from '../engine/ports.js';
import type { PipelineQuery } from '../engine/query.js';
import { interrupt, proceed, type StageResult } from '../engine/result.js';
import type { StageFactory } from '../engine/stage.js';
import { failureNotice } from '../engine/run.js';
import { chainText } from '../text/chain.js';
import { executeCommand } from './commands.js';
import { modelOf } from './preprocessor.js';

export const DEFAULT_COMMAND_PREFIXES = ['!', '！'];

/** The run request for the chat path: the per-turn prompt, the truncated history and the user's turn. */
export function buildRunRequest(q: PipelineQuery): RunRequest {
  const misc = q.config.output.misc;
  const la = q.config.ai['local-agent'];
  return {
    v: 1,
    queryId: q.queryId,
    pipelineId: q.pipelineId,
    route: q.route,
    conversationId: q.conversationId ?? '',
    model: modelOf(la.model),
    stream: q.streamOutput,
    messages: [...q.prompt, ...q.messages, q.userMessage ?? { role: 'user', content: chainText(q.messageChain) }],
    exceptionHandling: misc['exception-handling'],
    failureHint: misc['failure-hint'],
    runner: q.config.ai.runner.runner,
    tools: {
      mcpServers: 'all',
      enableAllTools: la['enable-all-tools'] !== false,
      tools: Array.isArray(la.tools) ? la.tools.filter((t): t is string => typeof t === 'string') : [],
    },
    removeThink: misc['remove-think'],
    externalConversationTtlSeconds: q.config.ai.runner['expire-time'],
  };
}

/**
 * MessageProcessor (spec 8.7), the generator stage whose items cross the wire. Commands are handled in
 * place and yield their replies here; chat goes to the runner through the handoff port, and the
 * runner's items come back as events that the dispatcher feeds to the downstream stages.
 */
export const messageProcessor: StageFactory = ({ name, deps }) => ({
  name,
  process(q) {
    return generate(q, deps);
  },
});

async function* generate(q: PipelineQuery, deps: PipelineDeps): AsyncGenerator<StageResult> {
  const text = chainText(q.messageChain).trim();
  const prefix = (deps.commandPrefixes ?? DEFAULT_COMMAND_PREFIXES).find((p) => p !== '' && text.startsWith(p));
  try {
    if (prefix !== undefined) {
      // The whole matched prefix is removed (LangBot strips exactly one character).
      for (const reply of await executeCommand(q, text.slice(prefix.length), deps)) {
        q.respMessages.push({ kind: 'command', text: reply });
        yield proceed();
      }
      return;
    }
    await need(deps, 'handoff', 'MessageProcessor').startRun(q, buildRunRequest(q));
  } catch (err) {
    const e = err instanceof Error ? err : new Error(String(err));
    yield interrupt({ userNotice: failureNotice(q, e), errorNotice: e.message, debugNotice: e.stack });
  }
}
