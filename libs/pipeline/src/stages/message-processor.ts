import { createHash } from 'node:crypto';
import { chatKey, LIMITS, SANDBOX_LIMITS, type BoxSessionTemplate, type ChatAttachment, type PluginEventOutcome, type RunRequest } from '@conveyor/contracts';
import { need, type PipelineDeps } from '../engine/ports.js';
import type { PipelineQuery } from '../engine/query.js';
import { interrupt, proceed, type StageResult } from '../engine/result.js';
import type { StageFactory } from '../engine/stage.js';
import { failureNotice } from '../engine/run.js';
import { chainText } from '../text/chain.js';
import { executeCommand, isCommandAdmin } from './commands.js';
import { modelOf } from './preprocessor.js';
import { fitHistory } from './history-fit.js';
import { alteredUserMessage, emitCommandSent, emitNormalMessageReceived } from '../plugins/events.js';

export const DEFAULT_COMMAND_PREFIXES = ['!', '！'];

/**
 * What a run request may take of the bus bound: the rest is room for what the broker counts besides
 * the payload (headers: trace context, ids, schema) and for a parse that adds defaults.
 */
export const RUN_REQUEST_MAX_BYTES = LIMITS.busPayloadBytes - 16 * 1024;

/**
 * The run request for the chat path: the per-turn prompt, the truncated history and the user's turn,
 * the history cut where needed so the whole stays within RUN_REQUEST_MAX_BYTES (`fitHistory`).
 */
export function buildRunRequest(q: PipelineQuery, onHistoryCut?: (messagesKept: number) => void): RunRequest {
  const userMessage = q.userMessage ?? { role: 'user' as const, content: chainText(q.messageChain) };
  const run = runRequestWith(q, [...q.prompt, userMessage]);
  const history = fitHistory(q.messages, RUN_REQUEST_MAX_BYTES - Buffer.byteLength(JSON.stringify(run)));
  if (history !== q.messages) onHistoryCut?.(history.length);
  return { ...run, messages: [...q.prompt, ...history, userMessage] };
}

function runRequestWith(q: PipelineQuery, messages: RunRequest['messages']): RunRequest {
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
    messages,
    exceptionHandling: misc['exception-handling'],
    failureHint: misc['failure-hint'],
    runner: q.config.ai.runner.runner,
    tools: {
      mcpServers: q.mcpServers ?? 'all',
      enableAllTools: la['enable-all-tools'] !== false,
      tools: Array.isArray(la.tools) ? la.tools.filter((t): t is string => typeof t === 'string') : [],
      plugins: q.plugins ?? 'all',
    },
    removeThink: misc['remove-think'],
    externalConversationTtlSeconds: q.config.ai.runner['expire-time'],
    ...knowledgeOf(q),
    ...sandboxOf(q),
  };
}

/**
 * The workspace a run works in: LangBot's `box-session-id-template` rendered for this message, under
 * the pipeline (a workspace never spans pipelines) and, below `{global}`, the chat's storage key (so a
 * web chat session never shares a platform chat's files).
 */
export function sandboxWorkspaceId(q: Pick<PipelineQuery, 'pipelineId' | 'route' | 'queryId' | 'conversationId'>, template: BoxSessionTemplate): string {
  const chat = chatKey(q.route);
  const scope = {
    '{global}': () => 'global',
    '{launcher_type}_{launcher_id}': () => `${chat.botId}/${chat.launcherType}_${chat.launcherId}`,
    '{launcher_type}_{launcher_id}_{sender_id}': () => `${chat.botId}/${chat.launcherType}_${chat.launcherId}_${q.route.senderId}`,
    '{launcher_type}_{launcher_id}_{conversation_id}': () => `${chat.botId}/${chat.launcherType}_${chat.launcherId}_${q.conversationId ?? ''}`,
    '{query_id}': () => `query/${q.queryId}`,
  }[template]();
  const id = `${q.pipelineId}/${scope}`;
  if (id.length <= SANDBOX_LIMITS.workspaceIdChars) return id;
  // Ids a platform sends may be long: a long one keeps its start and gets a digest of the whole, so two never meet.
  return `${id.slice(0, SANDBOX_LIMITS.workspaceIdChars - 65)}#${createHash('sha256').update(id).digest('hex')}`;
}

function sandboxOf(q: PipelineQuery): Pick<RunRequest, 'sandbox'> {
  const la = q.config.ai['local-agent'];
  if (!la['box-enabled']) return {};
  const inbox = inboxOf(q);
  return { sandbox: { workspace: sandboxWorkspaceId(q, la['box-session-id-template']), network: la['box-network'], skills: q.skills ?? 'all', ...(inbox.length ? { inbox } : {}) } };
}

const IMAGE_MIMES: Record<string, string> = { '/9j/': 'image/jpeg', iVBORw0KGgo: 'image/png', R0lGOD: 'image/gif', UklGR: 'image/webp' };

/**
 * The files the user sent (LangBot's `materialize_inbound_attachments`): Image and File components
 * whose bytes came with the message, up to the transfer bounds and to half of what the bus leaves
 * beside the user's turn (an image also rides in the turn itself). An image known only by its URL is
 * passed as the URL; any other file known only by URL stays out.
 */
function inboxOf(q: PipelineQuery): ChatAttachment[] {
  const turn = Buffer.byteLength(JSON.stringify(q.userMessage ?? ''));
  let room = Math.min(Math.ceil((SANDBOX_LIMITS.transferBytes * 4) / 3), Math.floor((RUN_REQUEST_MAX_BYTES - turn) / 2));
  const out: ChatAttachment[] = [];
  for (const c of q.messageChain) {
    if (out.length >= SANDBOX_LIMITS.transferFiles) break;
    let file: ChatAttachment | undefined;
    if (c.type === 'Image' && c.base64) {
      const data = /^data:([\w/+.-]+);base64,(.*)$/s.exec(c.base64);
      const base64 = data ? data[2]! : c.base64;
      const mime = data?.[1] ?? Object.entries(IMAGE_MIMES).find(([magic]) => base64.startsWith(magic))?.[1] ?? 'image/png';
      file = { name: `image-${out.length + 1}.${mime.split('/')[1]?.replace('jpeg', 'jpg') ?? 'png'}`, mime, base64 };
    } else if (c.type === 'Image' && /^https?:\/\//.test(c.url) && c.url.length <= 4096) {
      // Linked only (QQ, Telegram): the runner reads it, within its image bounds, when it fills the inbox.
      file = { name: `image-${out.length + 1}`, mime: 'image/*', base64: '', url: c.url };
    } else if (c.type === 'File' && c.base64) {
      const name = (c.name.split(/[\\/]/).pop() ?? '').replace(/[^\w.\- ]/g, '_').slice(0, 200) || `file-${out.length + 1}`;
      file = { name, mime: 'application/octet-stream', base64: c.base64.replace(/^data:[^,]*,/, '') };
    }
    if (!file || file.base64.length > room) continue;
    room -= file.base64.length;
    out.push(file);
  }
  return out;
}

/**
 * The knowledge bases of the run: PreProcessor's `_knowledge_base_uuids` (LangBot's variable, which a
 * plugin may have changed), the rerank model `__none__` meaning none as in LangBot.
 */
function knowledgeOf(q: PipelineQuery): Pick<RunRequest, 'knowledge'> {
  const listed = q.variables._knowledge_base_uuids;
  const ids = Array.isArray(listed) ? [...new Set(listed.filter((id): id is string => typeof id === 'string' && id !== ''))] : [];
  if (ids.length === 0) return {};
  const la = q.config.ai['local-agent'];
  const rerankModel = la['rerank-model'] === '__none__' ? '' : la['rerank-model'];
  return {
    knowledge: {
      knowledgeBaseIds: ids.slice(0, LIMITS.knowledgeBasesPerRun),
      rerankModel,
      // LangBot keeps scored[:rerank-top-k]: 0 keeps nothing when a rerank succeeds.
      rerankTopK: Math.min(la['rerank-top-k'], LIMITS.rerankDocuments),
    },
  };
}

/**
 * LangBot's MessageProcessor, the generator stage whose items cross the wire. Commands are handled in
 * place and yield their replies here; chat goes to the runner through the handoff port, and the
 * runner's items come back as events that the dispatcher feeds to the downstream stages.
 */
export const messageProcessor: StageFactory = ({ name, deps }) => ({
  name,
  process(q) {
    return generate(q, deps);
  },
});

/** Whether a whole message is one of the keywords that ask for a person (case and full/half width ignored). */
export function isHumanKeyword(text: string, keywords: readonly string[]): boolean {
  if (!keywords.length) return false;
  const folded = text.normalize('NFKC').trim().toLowerCase();
  return keywords.some((k) => k.normalize('NFKC').trim().toLowerCase() === folded);
}

/**
 * LangBot's answer to a plugin that prevented the default (the chat or the command handler): its reply
 * chain when it gave one, else the query ends with no reply.
 */
function preventedBy(q: PipelineQuery, outcome: PluginEventOutcome): StageResult {
  if (!outcome.replyMessageChain?.length) return interrupt();
  q.respMessages.push({ kind: 'plugin', chain: outcome.replyMessageChain });
  return proceed();
}

async function* generate(q: PipelineQuery, deps: PipelineDeps): AsyncGenerator<StageResult> {
  // An operator answers this chat: the message is logged and shown live like any other, but neither
  // a model nor a command answers it.
  if (deps.takeover?.isTakenOver({ botId: q.route.botId, launcherType: q.route.launcherType, launcherId: q.route.launcherId })) {
    deps.logger.info({ queryId: q.queryId, botId: q.route.botId, launcherType: q.route.launcherType, launcherId: q.route.launcherId }, 'chat taken over by an operator; the bot does not answer');
    yield interrupt();
    return;
  }
  const text = chainText(q.messageChain).trim();
  if (deps.humanRequests && isHumanKeyword(text, deps.humanRequests.settings.keywords)) {
    const chat = { botId: q.route.botId, launcherType: q.route.launcherType, launcherId: q.route.launcherId };
    await deps.humanRequests.request({ chat, via: 'keyword', reason: text, queryId: q.queryId });
    q.respMessages.push({ kind: 'command', text: deps.humanRequests.settings.reply });
    yield proceed();
    return;
  }
  const prefix = (deps.commandPrefixes ?? DEFAULT_COMMAND_PREFIXES).find((p) => p !== '' && text.startsWith(p));
  try {
    if (prefix !== undefined) {
      // The whole matched prefix is removed (LangBot strips exactly one character).
      const commandText = text.slice(prefix.length);
      const [command = '', ...params] = commandText.split(' ');
      // LangBot's command handler asks the plugins first: they may block the command, answering it or not.
      const plugins = await emitCommandSent(q, deps, { command, params, text: commandText, isAdmin: isCommandAdmin(q, deps.commandAdmins) });
      if (plugins.preventDefault) {
        yield preventedBy(q, plugins);
        return;
      }
      for (const reply of await executeCommand(q, commandText, deps)) {
        q.respMessages.push({ kind: 'command', text: reply });
        yield proceed();
      }
      return;
    }
    // LangBot's chat handler asks the plugins first: they may answer instead of the runner, end the
    // query silently, or rewrite the user's message the runner (and history) gets.
    const plugins = await emitNormalMessageReceived(q, deps);
    if (plugins.preventDefault) {
      yield preventedBy(q, plugins);
      return;
    }
    if (plugins.userMessageAlter !== undefined) {
      q.userMessage = alteredUserMessage(q.userMessage ?? { role: 'user', content: chainText(q.messageChain) }, plugins.userMessageAlter);
    }
    const built = buildRunRequest(q, (messagesKept) =>
      deps.logger.warn({ queryId: q.queryId, historyMessages: q.messages.length, messagesKept }, 'history cut to fit the bus bound'));
    const run: RunRequest = deps.humanRequests?.settings.tool ? { ...built, humanRequestTool: true } : built;
    await need(deps, 'handoff', 'MessageProcessor').startRun(q, run);
  } catch (err) {
    const e = err instanceof Error ? err : new Error(String(err));
    yield interrupt({ userNotice: failureNotice(q, e), errorNotice: e.message, debugNotice: e.stack });
  }
}
