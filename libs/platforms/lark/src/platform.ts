import { timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { hasPendingImages, headerOf, webhookAnswers, type HttpAnswer, type Platform, type PlatformInbound, type WebhookOutcome, type WebhookRequest } from '@conveyor/platform-kit';
import { LarkAdapter, withImages } from './adapter.js';
import { LarkConfigSchema, type LarkConfig } from './config.js';
import { LARK_NONCE_HEADER, LARK_SIGNATURE_HEADER, LARK_TIMESTAMP_HEADER, decryptLarkEvent, verifyLarkSignature } from './verify.js';
import { larkQuery, parseLarkBody } from './parse.js';
import { larkConnection } from './connection.js';
import { LARK } from './name.js';

export { LARK } from './name.js';

const ok = { status: 200, body: { code: 0, msg: 'ok' } };
const answer = (a: HttpAnswer): WebhookOutcome => ({ kind: 'answer', answer: a });
const refuse = (status: number, msg: string): WebhookOutcome => answer({ status, body: { code: status, msg } });
const malformed = (error: string) => refuse(400, `malformed event: ${error}`);

const sameSecret = (a: string, b: string) => {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
};

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

const Encrypted = z.object({ encrypt: z.string().min(1).max(1_000_000) }).loose();

/**
 * Lark / Feishu event subscription (schema 2.0) at `POST /bots/{bot_id}`. With an Encrypt Key every
 * body is `{"encrypt": ...}` and every event request is signed (`X-Lark-Signature`); the challenge is
 * accepted unsigned, as Lark sends it, since decrypting it already proves the key. With a
 * Verification Token, an event whose `header.token` (the challenge's `token`) differs is refused. A
 * bot with neither would take anyone's events, so it is refused too. Messages are published and
 * answered at once; Lark's redelivery of an event is dropped by its event_id in JetStream's
 * duplicate window.
 */
export const larkInbound: PlatformInbound<LarkConfig> = {
  handle(req: WebhookRequest, config: LarkConfig): WebhookOutcome {
    if (!config['enable-webhook']) return refuse(403, 'enable-webhook is off for this bot: its events come over the long connection the gateway holds');
    const encryptKey = config['encrypt-key'];
    const token = config['verification-token'];
    if (!encryptKey && !token) return refuse(403, 'the bot sets neither encrypt-key nor verification-token, so events cannot be verified');
    const outer = parseJson(req.rawBody.toString('utf8'));
    if (!outer.ok) return malformed('the body is not valid JSON');
    let body = outer.value;
    if (encryptKey) {
      const enc = Encrypted.safeParse(body);
      if (!enc.success) return refuse(401, 'invalid request: encrypt: the bot has an encrypt-key, the body must be encrypted');
      const plain = decryptLarkEvent(encryptKey, enc.data.encrypt);
      if (plain === null) return refuse(401, 'invalid request: encrypt: does not decrypt with the encrypt-key');
      const inner = parseJson(plain);
      if (!inner.ok) return malformed('the decrypted event is not valid JSON');
      body = inner.value;
    }
    const parsed = parseLarkBody(body, config.bot_name, req.botId);
    if (parsed.kind === 'malformed') return malformed(parsed.error);
    const signature = headerOf(req.headers, LARK_SIGNATURE_HEADER);
    if (encryptKey && (parsed.kind !== 'challenge' || signature !== undefined)) {
      const verified = verifyLarkSignature(encryptKey, { signature, timestamp: headerOf(req.headers, LARK_TIMESTAMP_HEADER), nonce: headerOf(req.headers, LARK_NONCE_HEADER) }, req.rawBody);
      if (!verified.ok) return refuse(401, `invalid signature: ${verified.reason}`);
    }
    if (token && !sameSecret(parsed.token ?? '', token)) return refuse(401, 'invalid verification token');
    switch (parsed.kind) {
      case 'challenge':
        return answer({ status: 200, body: { challenge: parsed.challenge } });
      case 'ignored':
        return { kind: 'publish', queries: [], ...(parsed.eventId ? { ref: { eventId: parsed.eventId } } : {}) };
      case 'message': {
        const m = parsed.inbound;
        const ref = { eventId: m.eventId, messageId: m.messageId };
        if (!hasPendingImages(m.messageChain)) return { kind: 'publish', ref, queries: [larkQuery(m, config['enable-stream-reply'])] };
        // Its images are downloaded with the app's token before the query is published.
        return {
          kind: 'pull',
          ref,
          pull: async (ctx) => {
            const resolved = await withImages(m, config, (reason) => ctx.logger.warn({ botId: req.botId, messageId: m.messageId, reason }, 'Lark image not downloaded; passed on as [Image]'));
            await ctx.publish(larkQuery(resolved, config['enable-stream-reply']));
          },
        };
      }
    }
  },
  // Lark redelivers an event that got no 2xx answer (backing off over hours).
  answers: webhookAnswers(ok, (status, error) => ({ status, body: { code: status, msg: error } })),
};

export const larkPlatform: Platform<LarkConfig> = {
  name: LARK,
  botConfigSchema: LarkConfigSchema,
  configurable: true,
  streamsByDefault: false,
  inbound: larkInbound,
  connection: larkConnection,
  outbound: (deps) => new LarkAdapter(deps.configs),
};
