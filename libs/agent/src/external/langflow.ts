import { randomUUID } from 'node:crypto';
import { checkResponse, ExternalReply, ExternalRunnerError, requestSignal, type ExternalInput, type ExternalResult } from './common.js';
import { concatenatedJson, MAX_REMOTE_RESPONSE_CHARS } from './stream-parsers.js';
import { str, either, DEFAULT_TIMEOUT_MS, type RunnerSettings, type SecretResolver } from './settings.js';

/** `ai.langflow-api`. */
export interface LangflowConfig {
  baseUrl: string;
  apiKey: string;
  flowId: string;
  inputType: string;
  outputType: string;
  /** Component overrides for the run; an empty object sends none. */
  tweaks: Record<string, unknown>;
  timeoutMs: number;
}

interface LangflowEvent {
  event?: string;
  data?: { chunk?: unknown; result?: unknown; error?: unknown; message?: unknown };
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | undefined => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : undefined);
const first = (v: unknown): unknown => (Array.isArray(v) ? v[0] : undefined);

/**
 * The answer in a run response, where Langflow puts it: the first output's message
 * (`outputs[0].outputs[0].results.message.text`, or the older `outputs.message.message`), else the
 * first of `messages`; undefined when none holds text.
 */
export function langflowAnswer(response: unknown): string | undefined {
  const inner = obj(first(obj(first(obj(response)?.outputs))?.outputs));
  const candidates = [
    obj(obj(inner?.results)?.message)?.text,
    obj(obj(inner?.outputs)?.message)?.message,
    obj(first(obj(response)?.messages))?.message,
  ];
  return candidates.find((c): c is string => typeof c === 'string' && c !== '');
}

/**
 * Langflow's Simplified Run Flow endpoint (`POST {base-url}/api/v1/run/{flow-id}`, `x-api-key`).
 * Streaming runs ask for `?stream=true`: JSON events back to back (`add_message`, `token` with the
 * delta in `data.chunk`, `end` with the whole run response in `data.result`, `error`), whose final
 * answer is the run response's, as a plain run answers it in one JSON body. The `session_id` (the
 * flow's chat memory) is kept per conversation: LangBot sends a new one every message, so a flow
 * with memory never sees the earlier turns.
 */
export async function runLangflow(cfg: LangflowConfig, input: ExternalInput): Promise<ExternalResult> {
  const conversationId = input.conversationId ?? randomUUID();
  const payload = {
    output_type: cfg.outputType,
    input_type: cfg.inputType,
    input_value: input.query,
    session_id: conversationId,
    ...(Object.keys(cfg.tweaks).length ? { tweaks: cfg.tweaks } : {}),
  };
  const url = `${cfg.baseUrl.replace(/\/+$/, '')}/api/v1/run/${encodeURIComponent(cfg.flowId)}${input.stream ? '?stream=true' : ''}`;
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: input.stream ? 'text/event-stream' : 'application/json', 'x-api-key': cfg.apiKey },
    body: JSON.stringify(payload),
    signal: requestSignal(cfg.timeoutMs, input.signal),
  });
  await checkResponse(res, 'Langflow');
  const reply = new ExternalReply(input);
  const whole = { text: '' };
  let result: unknown;
  let ended = false;
  for await (const value of concatenatedJson(res.body, whole)) {
    const ev = obj(value) as LangflowEvent | undefined;
    if (!input.stream) {
      result = value;
      ended = true;
      continue;
    }
    switch (ev?.event) {
      case 'token':
        if (typeof ev.data?.chunk === 'string' && ev.data.chunk) await reply.delta(ev.data.chunk);
        break;
      case 'error': {
        const detail = ev.data?.error ?? ev.data?.message ?? ev.data;
        throw new ExternalRunnerError(`Langflow error: ${(typeof detail === 'string' ? detail : JSON.stringify(detail)).slice(0, 500)}`);
      }
      case 'end':
        result = ev.data?.result;
        ended = true;
        break;
    }
  }
  if (!ended) throw new ExternalRunnerError(input.stream ? 'Langflow stream ended before its end event' : `Langflow answered no JSON: ${whole.text.slice(0, 200)}`);
  // Without a message in the response LangBot shows the response itself.
  const answer = langflowAnswer(result) ?? (input.stream ? undefined : JSON.stringify(result, null, 2).slice(0, MAX_REMOTE_RESPONSE_CHARS));
  return { text: await reply.finish(answer), conversationId };
}

/** Reads `ai.langflow-api` into the runner's config, with LangBot's defaults; secrets through `secret`. */
export function langflowConfig(s: RunnerSettings, secret: SecretResolver): LangflowConfig {
  const raw = s.tweaks ?? '{}';
  let tweaks: unknown = raw;
  if (typeof raw === 'string') {
    try {
      tweaks = raw.trim() === '' ? {} : JSON.parse(raw);
    } catch {
      throw new ExternalRunnerError('langflow-api tweaks is not valid JSON');
    }
  }
  if (tweaks === null || typeof tweaks !== 'object' || Array.isArray(tweaks)) throw new ExternalRunnerError('langflow-api tweaks must be a JSON object');
  return {
    baseUrl: str(s['base-url'], 'http://localhost:7860'),
    apiKey: secret(s['api-key']),
    flowId: str(s['flow-id']),
    inputType: str(either(s, 'input_type', 'input-type'), 'chat'),
    outputType: str(either(s, 'output_type', 'output-type'), 'chat'),
    tweaks: tweaks as Record<string, unknown>,
    timeoutMs: DEFAULT_TIMEOUT_MS,
  };
}
