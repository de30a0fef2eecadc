import type { LlmMessage, ModelSelection, ReasoningLevel } from '@conveyor/contracts';
import { need } from '../engine/ports.js';
import { CONTINUE } from '../engine/result.js';
import type { StageFactory } from '../engine/stage.js';
import { withDateParagraph } from './date-paragraph.js';
import { buildUserMessage, pruneHistory } from './user-message.js';
import { emitPromptPreProcessing } from '../plugins/events.js';

/** `ai.local-agent.model`: a legacy plain id or `{primary, fallbacks, reasoning}` (reasoning: model id → level). */
export function modelOf(model: string | { primary: string; fallbacks?: string[]; reasoning?: Record<string, ReasoningLevel> }): ModelSelection {
  if (typeof model === 'string') return { primary: model, fallbacks: [] };
  const reasoning = Object.entries(model.reasoning ?? {}).filter(([, level]) => level !== 'provider_default');
  return { primary: model.primary, fallbacks: model.fallbacks ?? [], ...(reasoning.length ? { reasoning: Object.fromEntries(reasoning) } : {}) };
}

/** LangBot's list, or the legacy single `knowledge-base` when the list is empty and it is not `__none__`. */
export function knowledgeBaseIds(list: string[] | undefined, legacy: string | undefined): string[] {
  if (list?.length) return [...list];
  return legacy && legacy !== '__none__' ? [legacy] : [];
}

/**
 * LangBot's PreProcessor: history from the shared store, the per-turn prompt, the user message and
 * the template variables. It never writes: history is stored once per turn after the final item.
 */
export const preProcessor: StageFactory = ({ name, config, deps }) => ({
  name,
  async process(q) {
    const localAgent = config.ai.runner.runner === 'local-agent';
    const la = config.ai['local-agent'];
    const { conversationId, history } = await need(deps, 'history', name).load(q);
    const model = modelOf(la.model);
    let vision = true;
    if (localAgent) {
      const abilities = model.primary && deps.models ? await deps.models.abilities(model.primary) : null;
      vision = abilities?.includes('vision') ?? false;
      const fallbacks = deps.models ? (await Promise.all(model.fallbacks.map(async (id) => ((await deps.models!.abilities(id)) ? id : null)))).filter((x): x is string => x !== null) : [];
      if (fallbacks.length) q.variables._fallback_model_uuids = fallbacks;
    }
    const preset: LlmMessage[] = la.prompt
      .filter((m) => m.role === 'system' || m.role === 'user' || m.role === 'assistant')
      .map((m) => ({ role: m.role as LlmMessage['role'], content: m.content }));
    q.conversationId = conversationId;
    q.prompt = preset;
    q.messages = pruneHistory(history, vision);
    const { message, text } = buildUserMessage(q.messageChain, { vision, combineQuote: config.trigger.misc['combine-quote-message'] });
    q.userMessage = message;
    const { launcherType, launcherId, senderId } = q.route;
    Object.assign(q.variables, {
      launcher_type: launcherType,
      launcher_id: launcherId,
      sender_id: senderId,
      session_id: `${launcherType}_${launcherId}`,
      conversation_id: conversationId,
      msg_create_time: Math.floor(Date.parse(q.receivedAt) / 1000),
      group_name: launcherType === 'group' ? (q.groupName ?? '') : '',
      sender_name: q.senderName,
      user_message_text: text,
      _knowledge_base_uuids: knowledgeBaseIds(la['knowledge-bases'], la['knowledge-base']),
    });
    // Plugins see and may replace the preset and history before the date paragraph is added (LangBot's order).
    await emitPromptPreProcessing(q, deps);
    if (localAgent) q.prompt = withDateParagraph(q.prompt, (deps.now ?? (() => new Date()))());
    return CONTINUE;
  },
});
