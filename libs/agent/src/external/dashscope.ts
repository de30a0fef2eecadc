import { checkResponse, ExternalReply, ExternalRunnerError, parseEvent, requestSignal, tokenCount, type ExternalInput, type ExternalResult, type ExternalUsage } from './common.js';
import { sseMessages } from './stream-parsers.js';
import { str, either, DEFAULT_TIMEOUT_MS, type RunnerSettings, type SecretResolver } from './settings.js';

/** `ai.dashscope-app-api` (Alibaba Cloud Model Studio / Bailian applications). */
export interface DashscopeConfig {
  /** The API root the DashScope SDK uses (`https://dashscope.aliyuncs.com/api/v1`). */
  baseUrl: string;
  appType: 'agent' | 'workflow';
  apiKey: string;
  appId: string;
  /** Put before a cited document's name (`references_quote`, default `参考资料来自:`). */
  referencesQuote: string;
  timeoutMs: number;
}

/** LangBot reads at most this many cited documents of one answer. */
const MAX_REFERENCES = 1024;

interface DashscopeChunk {
  output?: {
    session_id?: string;
    finish_reason?: string | null;
    text?: string | null;
    thoughts?: Array<{ thought?: string }> | null;
    doc_references?: Array<{ index_id?: string; doc_name?: string }> | null;
    workflow_message?: { message?: { content?: string } } | null;
  };
  code?: string;
  message?: string;
  request_id?: string;
  /**
   * The call's usage: apps report it per model (`models: [{model_id, input_tokens, output_tokens}]`),
   * some at the top (`input_tokens`, `output_tokens`); filled on the last chunk.
   */
  usage?: { models?: Array<{ model_id?: unknown; input_tokens?: unknown; output_tokens?: unknown }> | null; input_tokens?: unknown; output_tokens?: unknown };
}

/** The usage a DashScope chunk reports, if any, summed over its models. */
function dashscopeUsage(usage: DashscopeChunk['usage']): ExternalUsage | undefined {
  if (!usage || typeof usage !== 'object') return undefined;
  const models = Array.isArray(usage.models) ? usage.models : [];
  if (models.length) {
    let inputTokens = 0;
    let outputTokens = 0;
    for (const m of models) {
      inputTokens += tokenCount(m?.input_tokens) ?? 0;
      outputTokens += tokenCount(m?.output_tokens) ?? 0;
    }
    return { inputTokens, outputTokens };
  }
  const inputTokens = tokenCount(usage.input_tokens);
  const outputTokens = tokenCount(usage.output_tokens);
  return inputTokens !== undefined && outputTokens !== undefined ? { inputTokens, outputTokens } : undefined;
}

const REFERENCE_TAG = /<ref>\[(.*?)\]<\/ref>/g;

/**
 * An application of Alibaba Cloud's DashScope (`POST {base}/apps/{app-id}/completion`), called as
 * LangBot's SDK call does: server-sent events (`X-DashScope-SSE: enable`), incremental output, the
 * remote `session_id` carrying the conversation. Agent apps stream `output.text`, and their thoughts
 * (asked for unless `remove-think`) inside `<think>`; workflow apps (`flow_stream_mode:
 * message_format`, the query variables as `biz_params`) stream `output.workflow_message`. Cited
 * documents' `<ref>[n]</ref>` tags become `(<references_quote> <document>)`.
 */
export async function runDashscope(cfg: DashscopeConfig, input: ExternalInput): Promise<ExternalResult> {
  const workflow = cfg.appType === 'workflow';
  const thoughts = !workflow && !input.removeThink;
  const body = {
    input: {
      prompt: input.query,
      ...(input.conversationId ? { session_id: input.conversationId } : {}),
      ...(workflow && Object.keys(input.variables).length ? { biz_params: input.variables } : {}),
    },
    parameters: workflow ? { incremental_output: true, flow_stream_mode: 'message_format' } : { incremental_output: true, has_thoughts: thoughts, enable_thinking: thoughts },
    debug: {},
  };
  const res = await fetch(`${cfg.baseUrl.replace(/\/+$/, '')}/apps/${encodeURIComponent(cfg.appId)}/completion`, {
    method: 'POST',
    headers: { authorization: `Bearer ${cfg.apiKey}`, 'content-type': 'application/json', accept: 'text/event-stream', 'x-dashscope-sse': 'enable' },
    body: JSON.stringify(body),
    signal: requestSignal(cfg.timeoutMs, input.signal),
  });
  await checkResponse(res, 'DashScope');
  const references = new Map<string, string>();
  const reply = new ExternalReply(input, (text) =>
    references.size === 0 ? text : text.replace(REFERENCE_TAG, (tag, id: string) => (references.has(id) ? `(${cfg.referencesQuote} ${references.get(id)})` : tag)),
  );
  let conversationId = input.conversationId;
  let thinking: 'none' | 'open' | 'closed' = 'none';
  let ended = false;
  let usage: ExternalUsage | undefined;
  for await (const { event, data } of sseMessages(res.body)) {
    const chunk = parseEvent<DashscopeChunk>(data);
    if (!chunk || typeof chunk !== 'object') continue;
    if (event === 'error' || (chunk.code && !chunk.output)) {
      throw new ExternalRunnerError(`DashScope error ${chunk.code ?? ''}: ${chunk.message ?? ''} (request ${chunk.request_id ?? '?'})`);
    }
    const out = chunk.output ?? {};
    usage = dashscopeUsage(chunk.usage) ?? usage;
    if (out.session_id) conversationId = out.session_id;
    for (const doc of (out.doc_references ?? []).slice(0, MAX_REFERENCES)) {
      if (doc.index_id != null && references.size < MAX_REFERENCES) references.set(String(doc.index_id), String(doc.doc_name ?? ''));
    }
    if (workflow) {
      const content = out.workflow_message?.message?.content;
      if (content) await reply.delta(content);
    } else {
      const thought = out.thoughts?.[0]?.thought;
      if (thought) {
        await reply.delta(thinking === 'none' ? `<think>\n${thought}` : thought);
        thinking = 'open';
      } else if (thinking === 'open') {
        await reply.delta('\n</think>\n');
        thinking = 'closed';
      }
      if (out.text) await reply.delta(out.text);
    }
    // Incremental output marks every chunk but the last with the string "null".
    if (out.finish_reason && out.finish_reason !== 'null') ended = true;
  }
  if (!ended) throw new ExternalRunnerError('DashScope stream ended before its final event');
  if (thinking === 'open') await reply.delta('\n</think>\n');
  return { text: await reply.finish(), conversationId, ...(usage ? { usage } : {}) };
}

/** Reads `ai.dashscope-app-api` into the runner's config, with LangBot's defaults; secrets through `secret`. */
export function dashscopeConfig(s: RunnerSettings, secret: SecretResolver): DashscopeConfig {
  const appType = str(s['app-type'], 'agent');
  if (appType !== 'agent' && appType !== 'workflow') throw new ExternalRunnerError(`unsupported dashscope-app-api app-type ${JSON.stringify(appType)}; agent or workflow`);
  return {
    // Not a LangBot setting (its SDK's default endpoint); set it for another region or a proxy.
    baseUrl: str(s['base-url'], 'https://dashscope.aliyuncs.com/api/v1') || 'https://dashscope.aliyuncs.com/api/v1',
    appType,
    apiKey: secret(s['api-key']),
    appId: str(s['app-id']),
    referencesQuote: str(either(s, 'references_quote', 'references-quote'), '参考资料来自:'),
    timeoutMs: DEFAULT_TIMEOUT_MS,
  };
}
