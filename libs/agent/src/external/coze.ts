import { checkResponse, ExternalReply, ExternalRunnerError, parseEvent, requestSignal, tokenCount, type ExternalInput, type ExternalResult, type ExternalUsage } from './common.js';
import { sseMessages } from './stream-parsers.js';
import { str, num, bool, type RunnerSettings, type SecretResolver } from './settings.js';

/** `ai.coze-api`, keys and defaults of LangBot's pipeline metadata. */
export interface CozeConfig {
  /** `api-base`: `https://api.coze.cn`, or `https://api.coze.com` for coze.com. */
  apiBase: string;
  apiKey: string;
  botId: string;
  autoSaveHistory: boolean;
  timeoutMs: number;
}

interface CozeEventData {
  conversation_id?: string;
  content?: string;
  reasoning_content?: string;
  type?: string;
  code?: number | string;
  msg?: string;
  message?: string;
  last_error?: { code?: number | string; msg?: string };
  /** `conversation.chat.completed`: the chat's usage (`token_count`, `input_count`, `output_count`). */
  usage?: { input_count?: unknown; output_count?: unknown };
}

/**
 * Coze's chat API v3 (`POST /v3/chat`, `stream: true`, as LangBot calls it), answering with named
 * server-sent events: `conversation.chat.created` (the conversation id), `conversation.message.delta`
 * (answer deltas; `reasoning_content` for reasoning models), `conversation.chat.completed`, `done`;
 * `conversation.chat.failed` and `error` carry the failure. A self-hosted Coze may name its last event
 * differently, so any event ending in `.done` ends the stream too (as LangBot accepts).
 *
 * Reasoning is shown inside `<think>` as LangBot does (its streaming path writes `<think/>`, a typo;
 * the non-streaming one `<think>`, which `remove-think` recognises); with `remove-think` it is not
 * requested into the text at all. The conversation id goes back as `?conversation_id=`: LangBot keeps
 * it on the conversation but starts a new Coze conversation every message, which loses the context.
 */
export async function runCoze(cfg: CozeConfig, input: ExternalInput): Promise<ExternalResult> {
  const url = new URL(`${cfg.apiBase.replace(/\/+$/, '')}/v3/chat`);
  if (input.conversationId) url.searchParams.set('conversation_id', input.conversationId);
  const body = {
    bot_id: cfg.botId,
    user_id: input.user,
    stream: true,
    auto_save_history: cfg.autoSaveHistory,
    additional_messages: [{ role: 'user', content: input.query, content_type: 'text', meta_data: null }],
  };
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${cfg.apiKey}`, accept: 'text/event-stream', 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: requestSignal(cfg.timeoutMs, input.signal),
  });
  await checkResponse(res, 'Coze');
  // A refused request (unknown bot, bad parameters) is answered 200 with a JSON body instead of a stream.
  if (res.headers.get('content-type')?.includes('application/json')) {
    const err = parseEvent<CozeEventData>((await res.text()).slice(0, 64 * 1024));
    throw new ExternalRunnerError(`Coze error ${err?.code ?? ''}: ${err?.msg ?? err?.message ?? 'no stream'}`);
  }
  const reply = new ExternalReply(input);
  let conversationId = input.conversationId;
  let reasoning: 'none' | 'open' | 'closed' = 'none';
  let ended = false;
  let usage: ExternalUsage | undefined;
  for await (const { event, data } of sseMessages(res.body)) {
    const ev = parseEvent<CozeEventData>(data);
    const d = ev !== null && typeof ev === 'object' ? ev : {};
    if (d.conversation_id) conversationId = d.conversation_id;
    if (event === 'conversation.message.delta') {
      if (d.reasoning_content && !input.removeThink) {
        await reply.delta(reasoning === 'none' ? `<think>\n${d.reasoning_content}` : d.reasoning_content);
        reasoning = 'open';
      }
      if (d.content) {
        if (reasoning === 'open') {
          await reply.delta('\n</think>\n');
          reasoning = 'closed';
        }
        await reply.delta(d.content);
      }
    } else if (event === 'conversation.chat.failed') {
      throw new ExternalRunnerError(`Coze chat failed ${d.last_error?.code ?? ''}: ${d.last_error?.msg ?? ''}`);
    } else if (event === 'error') {
      throw new ExternalRunnerError(`Coze error ${d.code ?? ''}: ${d.msg ?? d.message ?? data.slice(0, 500)}`);
    } else if (event === 'conversation.chat.completed' || event === 'done' || event.endsWith('.done')) {
      const input = tokenCount(d.usage?.input_count);
      const output = tokenCount(d.usage?.output_count);
      if (input !== undefined && output !== undefined) usage = { inputTokens: input, outputTokens: output };
      ended = true;
    }
  }
  if (!ended) throw new ExternalRunnerError('Coze stream ended before its final event');
  if (reasoning === 'open') await reply.delta('\n</think>\n');
  return { text: await reply.finish(), conversationId, ...(usage ? { usage } : {}) };
}

/** Reads `ai.coze-api` into the runner's config, with LangBot's defaults; secrets through `secret`. */
export function cozeConfig(s: RunnerSettings, secret: SecretResolver): CozeConfig {
  return {
    apiBase: str(s['api-base'], 'https://api.coze.cn') || 'https://api.coze.cn',
    apiKey: secret(s['api-key']),
    botId: str(s['bot-id']),
    autoSaveHistory: bool(s['auto-save-history'], true),
    // 0 or less would abort every call at once; LangBot's default stands instead.
    timeoutMs: (num(s.timeout, 120) > 0 ? num(s.timeout, 120) : 120) * 1000,
  };
}
