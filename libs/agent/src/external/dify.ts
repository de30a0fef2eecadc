import { checkResponse, ExternalReply, ExternalRunnerError, tokenCount, type ExternalInput, type ExternalResult, type ExternalUsage } from './common.js';
import { sseEvents } from './stream-parsers.js';
import { str, type RunnerSettings, type SecretResolver } from './settings.js';

/** `ai.dify-service-api`: LangBot's Dify runner settings, under the same keys. */
export interface DifyConfig {
  baseUrl: string;
  /** `chatflow` (an advanced-chat app) is called as `chat` (LangBot 4.x). */
  appType: 'chat' | 'chatflow' | 'agent' | 'workflow';
  apiKey: string;
  /** Sent as the query when the user's text is empty. */
  basePrompt: string;
  /** LangBot ignores the configured timeout and uses 120 s; so does the default here. */
  timeoutMs: number;
}

interface DifyEvent {
  event?: string;
  answer?: string;
  conversation_id?: string;
  message?: string;
  code?: string;
  data?: { text?: string; outputs?: Record<string, unknown>; error?: string; status?: string };
  /** `message_end`: the run's usage (`prompt_tokens`, `completion_tokens`, `total_tokens`, prices). */
  metadata?: { usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } };
}

/**
 * Dify's service API, always in `response_mode: streaming` (as LangBot): chat, chatflow and agent apps via
 * `/chat-messages` (`message`/`agent_message` deltas), workflows via `/workflows/run` (`text_chunk`
 * deltas, the `summary` output at `workflow_finished`).
 */
export async function runDify(cfg: DifyConfig, input: ExternalInput): Promise<ExternalResult> {
  const workflow = cfg.appType === 'workflow';
  const url = `${cfg.baseUrl.replace(/\/+$/, '')}${workflow ? '/workflows/run' : '/chat-messages'}`;
  const query = input.query || cfg.basePrompt;
  const body = workflow
    ? { inputs: { ...input.variables, langbot_user_message_text: query }, user: input.user, response_mode: 'streaming' }
    : { inputs: input.variables, query, user: input.user, response_mode: 'streaming', conversation_id: input.conversationId ?? '', files: [] };
  const signal = AbortSignal.any([AbortSignal.timeout(cfg.timeoutMs), ...(input.signal ? [input.signal] : [])]);
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${cfg.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });
  await checkResponse(res, 'Dify');
  const reply = new ExternalReply(input);
  let conversationId = input.conversationId;
  let summary: string | undefined;
  let ended = false;
  let usage: ExternalUsage | undefined;
  for await (const data of sseEvents(res.body)) {
    let ev: DifyEvent;
    try {
      ev = JSON.parse(data) as DifyEvent;
    } catch {
      continue;
    }
    if (ev.conversation_id) conversationId = ev.conversation_id;
    switch (ev.event) {
      case 'message':
      case 'agent_message':
        if (ev.answer) await reply.delta(ev.answer);
        break;
      case 'text_chunk':
        if (ev.data?.text) await reply.delta(ev.data.text);
        break;
      case 'workflow_finished': {
        if (ev.data?.status && ev.data.status !== 'succeeded') throw new ExternalRunnerError(`Dify workflow ${ev.data.status}: ${ev.data.error ?? ''}`);
        const s = ev.data?.outputs?.summary;
        if (s !== undefined) summary = typeof s === 'string' ? s : JSON.stringify(s);
        ended = true;
        break;
      }
      case 'message_end': {
        // A workflow run reports only a total (workflow_finished data.total_tokens), which splits into no input and output.
        const input = tokenCount(ev.metadata?.usage?.prompt_tokens);
        const output = tokenCount(ev.metadata?.usage?.completion_tokens);
        if (input !== undefined && output !== undefined) usage = { inputTokens: input, outputTokens: output };
        ended = true;
        break;
      }
      case 'error':
        throw new ExternalRunnerError(`Dify error ${ev.code ?? ''}: ${ev.message ?? ''}`);
    }
  }
  if (!ended) throw new ExternalRunnerError('Dify stream ended before its final event');
  return { text: await reply.finish(summary), conversationId, ...(usage ? { usage } : {}) };
}

/** Reads `ai.dify-service-api` into the runner's config, with LangBot's defaults; secrets through `secret`. */
export function difyConfig(s: RunnerSettings, secret: SecretResolver): DifyConfig {
  const appType = str(s['app-type'], 'chat');
  return {
    baseUrl: str(s['base-url'], 'https://api.dify.ai/v1'),
    appType: appType === 'agent' || appType === 'workflow' || appType === 'chatflow' ? appType : 'chat',
    apiKey: secret(s['api-key']),
    basePrompt: str(s['base-prompt'], 'When the file content is readable, please read the content of this file. When the file is an image, describe the content of this image.'),
    timeoutMs: 120_000,
  };
}
