import { checkResponse, ExternalReply, ExternalRunnerError, parseEvent, requestSignal, type ExternalInput, type ExternalResult } from './common.js';
import { sseMessages } from './stream-parsers.js';
import { bool, num, str, type RunnerSettings, type SecretResolver } from './settings.js';

/** `ai.weknora-api`, keys and defaults of LangBot's pipeline metadata. */
export interface WeknoraConfig {
  /** `base-url`, with `/api/v1`. */
  baseUrl: string;
  apiKey: string;
  /** `agent`: `/agent-chat` (tools, web search); `chat`: `/knowledge-chat` (knowledge base RAG). */
  appType: 'agent' | 'chat';
  agentId: string;
  knowledgeBaseIds: string[];
  webSearchEnabled: boolean;
  /** `base-prompt`: sent when the message has no text (only images). */
  basePrompt: string;
  timeoutMs: number;
}

interface WeknoraEvent {
  id?: string;
  response_type?: string;
  content?: string;
  done?: boolean;
}

/** LangBot's time limit for opening a WeKnora session. */
const SESSION_TIMEOUT_MS = 30_000;

/**
 * WeKnora's API (`X-API-Key`). A conversation is a WeKnora session: a new one is opened with
 * `POST /sessions` (titled `IM Chat - {user}` as LangBot does) and its id is kept as the remote
 * conversation. The question goes to `POST /agent-chat/{session}` or `/knowledge-chat/{session}`,
 * which answer with server-sent `data:` events carrying a `response_type`: `answer` events append
 * `content` (`done` on the last), `error` ends the call with its content; thinking, tool calls,
 * tool results and references are not part of the reply, as in LangBot (whose tool-call chunks carry
 * no text).
 */
export async function runWeknora(cfg: WeknoraConfig, input: ExternalInput): Promise<ExternalResult> {
  const base = cfg.baseUrl.replace(/\/+$/, '');
  const headers = { 'x-api-key': cfg.apiKey, 'content-type': 'application/json' };
  const sessionId = input.conversationId ?? (await openSession(base, headers, input));
  const body: Record<string, unknown> = { query: input.query || cfg.basePrompt, channel: 'im' };
  if (cfg.appType === 'agent') body.agent_enabled = true;
  if (cfg.agentId) body.agent_id = cfg.agentId;
  if (cfg.knowledgeBaseIds.length) body.knowledge_base_ids = cfg.knowledgeBaseIds;
  if (cfg.appType === 'agent' && cfg.webSearchEnabled) body.web_search_enabled = true;
  const path = cfg.appType === 'agent' ? 'agent-chat' : 'knowledge-chat';
  const res = await fetch(`${base}/${path}/${encodeURIComponent(sessionId)}`, {
    method: 'POST',
    headers: { ...headers, accept: 'text/event-stream' },
    body: JSON.stringify(body),
    signal: requestSignal(cfg.timeoutMs, input.signal),
  });
  await checkResponse(res, 'WeKnora');
  const reply = new ExternalReply(input);
  let events = 0;
  for await (const { data } of sseMessages(res.body)) {
    const ev = parseEvent<WeknoraEvent>(data);
    if (ev === null || typeof ev !== 'object') continue;
    events++;
    if (ev.response_type === 'answer' && ev.content) await reply.delta(String(ev.content));
    else if (ev.response_type === 'error') throw new ExternalRunnerError(`WeKnora error: ${String(ev.content ?? '').slice(0, 500)}`);
  }
  if (events === 0) throw new ExternalRunnerError('WeKnora answered no events');
  return { text: await reply.finish(), conversationId: sessionId };
}

async function openSession(base: string, headers: Record<string, string>, input: ExternalInput): Promise<string> {
  const res = await fetch(`${base}/sessions`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ title: `IM Chat - ${input.user}` }),
    signal: requestSignal(SESSION_TIMEOUT_MS, input.signal),
  });
  await checkResponse(res, 'WeKnora');
  const created = parseEvent<{ data?: { id?: unknown } }>((await res.text()).slice(0, 1024 * 1024));
  const id = created?.data?.id;
  if (typeof id !== 'string' || !id) throw new ExternalRunnerError('WeKnora opened a session without an id');
  return id;
}

/**
 * Reads `ai.weknora-api` into the runner's config, with LangBot's defaults; secrets through `secret`.
 * LangBot refuses an app type other than agent or chat, and an empty key or base URL, before calling.
 * Without `agent-id` a chat app uses `builtin-quick-answer` and an agent app `builtin-smart-reasoning`,
 * as LangBot's code reads it.
 */
export function weknoraConfig(s: RunnerSettings, secret: SecretResolver): WeknoraConfig {
  const appType = str(s['app-type'], 'agent');
  if (appType !== 'agent' && appType !== 'chat') throw new ExternalRunnerError(`unsupported weknora-api app-type ${JSON.stringify(appType)}; LangBot runs agent or chat`);
  const apiKey = secret(s['api-key']).trim();
  if (!apiKey) throw new ExternalRunnerError('weknora-api api-key is not set (WeKnora front end: Settings → API Keys)');
  const baseUrl = str(s['base-url'], 'http://localhost:8080/api/v1').trim();
  if (!baseUrl) throw new ExternalRunnerError('weknora-api base-url is not set, e.g. http://localhost:8080/api/v1');
  const ids = s['knowledge-base-ids'];
  return {
    baseUrl,
    apiKey,
    appType,
    agentId: str(s['agent-id'], appType === 'agent' ? 'builtin-smart-reasoning' : 'builtin-quick-answer'),
    knowledgeBaseIds: Array.isArray(ids) ? ids.map((id) => str(id)).filter((id) => id.trim() !== '') : [],
    webSearchEnabled: bool(s['web-search-enabled'], false),
    basePrompt: str(s['base-prompt'], '请回答用户的问题。'),
    // 0 or less would abort every call at once; LangBot's default stands instead.
    timeoutMs: (num(s.timeout, 120) > 0 ? num(s.timeout, 120) : 120) * 1000,
  };
}
