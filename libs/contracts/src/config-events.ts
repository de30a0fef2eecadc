import { z } from 'zod';

/**
 * Core NATS (not JetStream) on `topology.subjects.configChanged`: a configuration row was created,
 * changed or deleted. Every service drops its cached copy of that row on receipt; a replica that was
 * disconnected (and so may have missed events) drops all its configuration caches instead.
 * `revision` is the row's version after the write (0 when deleted); setup publishes it for every row a
 * file apply touched. `settings` is the instance settings (id `instance`, see `INSTANCE_SETTINGS_ID`);
 * `skill` an installed Agent Skill (id its name).
 */
export const ConfigChangeKind = z.enum(['bot', 'pipeline', 'model', 'mcp-server', 'settings', 'skill']);
export type ConfigChangeKind = z.infer<typeof ConfigChangeKind>;

export const ConfigChanged = z.object({
  version: z.literal(1),
  kind: ConfigChangeKind,
  id: z.string().min(1).max(200),
  revision: z.number().int().min(0),
}).meta({ id: 'ConfigChanged/1' });
export type ConfigChanged = z.infer<typeof ConfigChanged>;

/**
 * How long a service keeps a cached configuration row at most. Changes arrive as `ConfigChanged`
 * events and drop the row at once; this only bounds how stale a row can get if an event is lost while
 * the connection stays up (a reconnect drops every cache anyway).
 */
export const CONFIG_CACHE_SAFETY_TTL_MS = 5 * 60_000;
