import { createHmac, randomUUID } from 'node:crypto';
import { checkResponse, ExternalReply, type ExternalInput, type ExternalResult } from './common.js';
import { concatenatedJson } from './stream-parsers.js';
import { str, num, type RunnerSettings, type SecretResolver } from './settings.js';

/** `ai.n8n-service-api`: LangBot's n8n runner settings, under the same keys. */
export interface N8nConfig {
  webhookUrl: string;
  authType: 'none' | 'basic' | 'jwt' | 'header';
  basicUsername?: string;
  basicPassword?: string;
  jwtSecret?: string;
  jwtAlgorithm?: string;
  headerName?: string;
  headerValue?: string;
  timeoutMs: number;
  outputKey: string;
}

const b64url = (v: string | Buffer) => Buffer.from(v).toString('base64url');

/** HS256/384/512 JWT like LangBot's: `sub: n8n-webhook`, one hour. */
function jwt(secret: string, algorithm = 'HS256'): string {
  const hash = { HS256: 'sha256', HS384: 'sha384', HS512: 'sha512' }[algorithm];
  if (!hash) throw new Error(`unsupported n8n JWT algorithm ${algorithm}`);
  const now = Math.floor(Date.now() / 1000);
  const head = `${b64url(JSON.stringify({ alg: algorithm, typ: 'JWT' }))}.${b64url(JSON.stringify({ sub: 'n8n-webhook', iat: now, exp: now + 3600 }))}`;
  return `${head}.${b64url(createHmac(hash, secret).update(head).digest())}`;
}

function authHeaders(cfg: N8nConfig): Record<string, string> {
  switch (cfg.authType) {
    case 'basic':
      return { authorization: `Basic ${Buffer.from(`${cfg.basicUsername ?? ''}:${cfg.basicPassword ?? ''}`).toString('base64')}` };
    case 'jwt':
      return { authorization: `Bearer ${jwt(cfg.jwtSecret ?? '', cfg.jwtAlgorithm)}` };
    case 'header':
      return cfg.headerName ? { [cfg.headerName]: cfg.headerValue ?? '' } : {};
    default:
      return {};
  }
}

/**
 * An n8n chat webhook. A streaming workflow answers with `{"type":"item","content":…}` objects and
 * `{"type":"end"}`; a plain one with a JSON object whose `output-key` field is the answer.
 */
export async function runN8n(cfg: N8nConfig, input: ExternalInput): Promise<ExternalResult> {
  const conversationId = input.conversationId ?? randomUUID();
  const payload = {
    ...input.variables,
    chatInput: input.query,
    message: input.query,
    user_message_text: input.query,
    conversation_id: conversationId,
    session_id: conversationId,
    user_id: input.user,
    msg_create_time: Math.floor(Date.now() / 1000),
  };
  const signal = AbortSignal.any([AbortSignal.timeout(cfg.timeoutMs), ...(input.signal ? [input.signal] : [])]);
  const res = await fetch(cfg.webhookUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...authHeaders(cfg) },
    body: JSON.stringify(payload),
    signal,
  });
  await checkResponse(res, 'n8n');
  const reply = new ExternalReply(input);
  const whole = { text: '' };
  let items = 0;
  let plain: unknown;
  for await (const obj of concatenatedJson(res.body, whole)) {
    const o = obj as { type?: string; content?: unknown };
    if (o && o.type === 'item' && 'content' in o) {
      items++;
      await reply.delta(String(o.content));
    } else if (!(o && o.type === 'end')) plain ??= obj;
  }
  if (items > 0) return { text: await reply.finish(), conversationId };
  // Not streamed: the configured key of the JSON answer, the whole JSON, or the raw text.
  let answer = whole.text;
  if (plain && typeof plain === 'object' && !Array.isArray(plain)) {
    const v = (plain as Record<string, unknown>)[cfg.outputKey];
    answer = v === undefined ? JSON.stringify(plain) : typeof v === 'string' ? v : JSON.stringify(v);
  }
  return { text: await reply.finish(answer), conversationId };
}

/** Reads `ai.n8n-service-api` into the runner's config, with LangBot's defaults; secrets through `secret`. */
export function n8nConfig(s: RunnerSettings, secret: SecretResolver): N8nConfig {
  const auth = str(s['auth-type'], 'none');
  return {
    webhookUrl: str(s['webhook-url']),
    authType: auth === 'basic' || auth === 'jwt' || auth === 'header' ? auth : 'none',
    basicUsername: str(s['basic-username']),
    basicPassword: secret(s['basic-password']),
    jwtSecret: secret(s['jwt-secret']),
    jwtAlgorithm: str(s['jwt-algorithm'], 'HS256'),
    headerName: str(s['header-name']),
    headerValue: secret(s['header-value']),
    timeoutMs: num(s.timeout, 120) * 1000,
    outputKey: str(s['output-key'], 'response'),
  };
}
