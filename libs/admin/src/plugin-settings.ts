// Plugins' settings through the admin API: the schema a live plugin announces, the values an admin
// stored for the installation and per pipeline (secrets masked as bots' settings are), and their
// change, checked against the schema and announced to the plugin so it takes them without a restart.
import { Ajv, type ErrorObject } from 'ajv';
import { PLUGIN_LIMITS, type AdminApi } from '@conveyor/contracts';
import { bindsPlugin } from '@conveyor/pipeline';
import { INSTALLATION_SCOPE, PluginSettingsConflict, type PluginSettingsStore, type PrismaClient } from '@conveyor/persistence';
import { recordAudit } from './audit.js';
import type { Principal } from './auth.js';
import { AdminApiError } from './errors.js';
import { maskSecrets, unmaskSecrets } from './masking.js';

/** What the admin knows of a live plugin: its settings schema and the pipelines binding it. */
export interface PluginSettingsSource {
  /** The live plugin's settings schema; undefined when it declares none, null when it is not running. */
  schemaOf(name: string): Record<string, unknown> | undefined | null;
  /** Announces a change to the plugin (its settings subject); a failure is logged, the change is stored. */
  announce(name: string, pipelineId: string | null): Promise<void>;
}

/** A settings schema's secret properties: `writeOnly: true` or `format: "password"`. */
export function secretSettingKeys(schema: Record<string, unknown>): Set<string> {
  const properties = schema.properties && typeof schema.properties === 'object' ? (schema.properties as Record<string, Record<string, unknown>>) : {};
  return new Set(Object.entries(properties).filter(([, p]) => p && typeof p === 'object' && (p.writeOnly === true || p.format === 'password')).map(([k]) => k));
}

/** The values with the schema's secrets masked (and, by name, anything secret-looking below them). */
function masked(values: Record<string, unknown>, secrets: ReadonlySet<string>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(values).map(([k, v]) => [k, maskSecrets(v, secrets.has(k))]));
}

const describe = (errors: ErrorObject[] | null | undefined) =>
  (errors ?? []).slice(0, 5).map((e) => `${e.instancePath ? e.instancePath.slice(1).replace(/\//g, '.') : '(values)'} ${e.message ?? 'is invalid'}`).join('; ');

export class PluginSettings {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly store: PluginSettingsStore,
    private readonly source: PluginSettingsSource,
  ) {}

  async get(name: string): Promise<AdminApi.PluginSettings> {
    const schema = this.schema(name);
    const secrets = secretSettingKeys(schema);
    const scopes = await this.store.scopes(name);
    return {
      name,
      schema,
      scopes: scopes.map((s) => ({ pipelineId: s.scope === INSTALLATION_SCOPE ? null : s.scope, values: masked(s.values, secrets), version: s.version, updatedAt: s.updatedAt.toISOString() })),
      pipelines: await this.bindingPipelines(name),
    };
  }

  /** Replaces one scope's values; a masked secret keeps the stored one; the plugin is told. */
  async put(actor: Principal, name: string, input: AdminApi.PluginSettingsUpdateInput): Promise<AdminApi.PluginSettings> {
    const schema = this.schema(name);
    const scope = input.pipelineId ?? INSTALLATION_SCOPE;
    if (input.pipelineId !== null && !(await this.bindingPipelines(name)).includes(input.pipelineId)) {
      throw AdminApiError.invalid('body.pipelineId', `pipeline ${JSON.stringify(input.pipelineId)} does not exist or does not bind plugin ${name}`);
    }
    const stored = await this.store.scope(name, scope);
    const values = unmaskSecrets(input.values, stored?.values ?? {}, 'body.values') as Record<string, unknown>;
    if (JSON.stringify(values).length > PLUGIN_LIMITS.settingsValuesBytes) throw AdminApiError.invalid('body.values', `settings are at most ${PLUGIN_LIMITS.settingsValuesBytes} bytes`);
    // A pipeline's values go over the installation's, so alone they need not satisfy `required`.
    const check = new Ajv({ strict: false, allErrors: true, addUsedSchema: false }).compile(input.pipelineId === null ? schema : { ...schema, required: [] });
    if (!check(values)) throw AdminApiError.invalid('body.values', describe(check.errors));
    let version: number;
    try {
      version = await this.store.put(name, scope, values, input.version);
    } catch (err) {
      if (err instanceof PluginSettingsConflict) throw new AdminApiError('conflict', err.message, { field: 'body.version' });
      throw err;
    }
    const before = stored?.values ?? {};
    const changes = [...new Set([...Object.keys(before), ...Object.keys(values)])].filter((k) => JSON.stringify(before[k]) !== JSON.stringify(values[k])).sort();
    await this.prisma.$transaction((tx) => recordAudit(tx, { actor: actor.actor, resource: 'plugin', resourceId: name, action: input.pipelineId === null ? 'update-settings' : `update-settings:${input.pipelineId}`, versionBefore: input.version, versionAfter: version, changes }));
    await this.source.announce(name, input.pipelineId);
    return this.get(name);
  }

  /** The live plugin's schema; a plugin that is not running, or declares no settings, has none to fill in. */
  private schema(name: string): Record<string, unknown> {
    const schema = this.source.schemaOf(name);
    if (schema === null) throw AdminApiError.notFound('plugin', name);
    if (schema === undefined) throw new AdminApiError('not_found', `plugin ${name} declares no settings`, { field: 'path.name' });
    return schema;
  }

  private async bindingPipelines(name: string): Promise<string[]> {
    const pipelines = await this.prisma.pipeline.findMany({ select: { id: true, extensionsPreferences: true }, orderBy: { id: 'asc' } });
    return pipelines.filter((p) => bindsPlugin(p.extensionsPreferences, name)).map((p) => p.id);
  }
}
