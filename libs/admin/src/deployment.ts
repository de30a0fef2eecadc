// What the deployment holds beside its configuration, as the admin API shows it: each bot's webhook
// URL and held connection, each platform's settings schema, and the plugins their heartbeats announce.
import { z } from 'zod';
import type { AdminApi } from '@conveyor/contracts';
import { holdsConnection, platforms, type Platform } from '@conveyor/platforms';
import type { PrismaClient } from '@conveyor/persistence';
import { bindsPlugin } from '@conveyor/pipeline';
import { AdminApiError } from './errors.js';

/**
 * Whether a platform's events reach the ingress over HTTP: its own webhook, or (a configurable
 * platform the gateway holds no connection for) the ingress' own `/bots/{id}` protocol.
 */
function receivesWebhooks(platform: Platform): boolean {
  return platform.inbound !== undefined || (platform.configurable && platform.connection === undefined);
}

/** The adapters a bot may have, each with the JSON Schema of its settings. */
export function platformList(): AdminApi.PlatformList {
  return {
    items: platforms.all().filter((p) => p.configurable).map((p) => ({
      name: p.name,
      // JSON Schema's own type is wider than a record of unknowns; it is one.
      configSchema: z.toJSONSchema(p.botConfigSchema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>,
      webhook: receivesWebhooks(p),
      connection: p.connection !== undefined,
    })),
  };
}

/** The ingress path every bot's webhook has (the platform's own sub-paths follow it). */
export const botWebhookPath = (botId: string) => `/bots/${encodeURIComponent(botId)}`;

/** A connection lease as the gateway keeps it (libs/gateway's LeaseSnapshot). */
export interface LeaseView {
  holder: string | null;
  expiresInMs: number | null;
  resumable: boolean;
}

export interface EndpointOptions {
  /** Where platforms reach the ingress (INGRESS_PUBLIC_URL), without a trailing slash; unset: paths only. */
  ingressPublicUrl: string | undefined;
  lease(botId: string): Promise<LeaseView>;
}

export async function botEndpoint(prisma: PrismaClient, id: string, options: EndpointOptions): Promise<AdminApi.BotEndpoint> {
  const bot = await prisma.bot.findUnique({ where: { id }, select: { id: true, adapter: true, adapterConfig: true } });
  if (!bot) throw AdminApiError.notFound('bot', id);
  const platform = platforms.get(bot.adapter);
  const webhookPath = platform && receivesWebhooks(platform) ? botWebhookPath(bot.id) : null;
  const gatewayHeld = platform ? holdsConnection(platform, bot.adapterConfig) : false;
  let connection: AdminApi.BotConnection | null = null;
  if (gatewayHeld) {
    const lease = await options.lease(bot.id);
    connection = { state: lease.holder ? 'held' : 'not_held', holder: lease.holder, leaseExpiresInMs: lease.expiresInMs, resumable: lease.resumable };
  }
  return {
    botId: bot.id,
    adapter: bot.adapter,
    // A bot whose events come over the held connection has no webhook to paste, even if its platform could.
    webhookPath: gatewayHeld && platform?.inbound === undefined ? null : webhookPath,
    webhookUrl: webhookPath && options.ingressPublicUrl && !(gatewayHeld && platform?.inbound === undefined) ? `${options.ingressPublicUrl}${webhookPath}` : null,
    gatewayHeld,
    connection,
  };
}

/** A live plugin registration (libs/bus' PluginRegistrationState). */
export interface PluginView {
  registration: { name: string; version?: string; events: readonly string[]; tools: readonly { name: string }[]; commands: readonly { name: string }[]; retrievers: readonly { name: string }[]; priority: number; timeoutMs: number; settings?: Record<string, unknown> };
  lastHeartbeatAt: number;
  expiresAt: number;
}

/** A plugin's calls over the last hour (libs/message-state's PluginCallSummary). */
export interface PluginCallsView {
  calls: number;
  errors: number;
  meanMs: number | null;
}

/** The registered plugins with the pipelines binding each (all plugins, or this one by name) and their last hour's calls. */
export async function pluginList(prisma: PrismaClient, live: readonly PluginView[], lastHour: ReadonlyMap<string, PluginCallsView> = new Map()): Promise<AdminApi.PluginList> {
  const pipelines = live.length ? await prisma.pipeline.findMany({ select: { id: true, extensionsPreferences: true }, orderBy: { id: 'asc' } }) : [];
  return {
    items: live.map(({ registration: r, lastHeartbeatAt, expiresAt }) => ({
      name: r.name,
      version: r.version ?? null,
      events: [...r.events],
      tools: r.tools.map((t) => t.name),
      commands: r.commands.map((c) => c.name),
      retrievers: r.retrievers.map((x) => x.name),
      lastHour: lastHour.get(r.name) ?? { calls: 0, errors: 0, meanMs: null },
      priority: r.priority,
      timeoutMs: r.timeoutMs,
      lastHeartbeatAt: new Date(lastHeartbeatAt).toISOString(),
      expiresAt: new Date(expiresAt).toISOString(),
      pipelines: pipelines.filter((p) => bindsPlugin(p.extensionsPreferences, r.name)).map((p) => p.id),
      hasSettings: r.settings !== undefined,
    })),
  };
}
