import { Inject, Injectable } from '@nestjs/common';
import type { MessageChain, ReplyRoute } from '@conveyor/contracts';
import { callbackBody, callbackTimeoutMs, deliverCallback, outboundSigningKey, parseAdapterConfig, type AdapterConfig } from '@conveyor/http-bot';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { inSpan } from '@conveyor/telemetry';
import { SpanKind } from '@opentelemetry/api';
import { SessionSequence } from './session-sequence.js';

export interface OutboundReply {
  message: MessageChain;
  isFinal: boolean;
  stream: boolean;
}

export type SendResult = { delivered: true } | { delivered: false; reason: string };

const CONFIG_TTL_MS = 5_000;

/** Sends replies to an HTTP-bot integrator's callback_url, signed, numbered per session. */
@Injectable()
export class HttpBotOutbound {
  private readonly configs = new Map<string, { config: AdapterConfig | null; expires: number }>();
  private readonly sequence: SessionSequence;

  constructor(@Inject(INFRA) private readonly infra: Infra) {
    this.sequence = new SessionSequence(infra.redis, infra.topology.prefix);
  }

  async send(route: ReplyRoute, reply: OutboundReply): Promise<SendResult> {
    const config = await this.adapterConfig(route.botId);
    if (!config) return { delivered: false, reason: `bot ${route.botId} not found` };
    if (!config.callback_url) return { delivered: false, reason: 'callback_url is empty' };
    const sequence = await this.sequence.next(route.botId, route.sessionId, reply.isFinal);
    const body = callbackBody({
      sessionId: route.sessionId,
      replyTo: route.replyTo,
      sequence,
      isFinal: reply.isFinal,
      stream: reply.stream,
      message: reply.message,
      timestamp: new Date(),
    });
    return inSpan('http-bot send', { 'conveyor.bot.id': route.botId, 'conveyor.reply.sequence': sequence, 'conveyor.reply.final': reply.isFinal }, async (span) => {
      const outcome = await deliverCallback({
        url: config.callback_url,
        body,
        secret: outboundSigningKey(config),
        timeoutMs: callbackTimeoutMs(config),
        maxRetries: config.callback_max_retries,
      });
      span.setAttribute('conveyor.send.attempts', outcome.attempts);
      if (outcome.delivered) return { delivered: true };
      return { delivered: false, reason: outcome.error ?? `callback answered ${outcome.lastStatus}` };
    }, SpanKind.CLIENT);
  }

  private async adapterConfig(botId: string): Promise<AdapterConfig | null> {
    const hit = this.configs.get(botId);
    if (hit && hit.expires > Date.now()) return hit.config;
    const bot = await this.infra.prisma.bot.findUnique({ where: { id: botId }, select: { adapterConfig: true } });
    const config = bot ? parseAdapterConfig(bot.adapterConfig) : null;
    this.configs.set(botId, { config, expires: Date.now() + CONFIG_TTL_MS });
    return config;
  }
}
