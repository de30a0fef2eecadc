import type { Prisma, PrismaClient } from './generated/prisma/client.js';

/** The scope of a plugin's installation-wide settings; a pipeline's scope is its id. */
export const INSTALLATION_SCOPE = '';

export interface StoredPluginSettings {
  /** `INSTALLATION_SCOPE` or a pipeline id. */
  scope: string;
  values: Record<string, unknown>;
  version: number;
  updatedAt: Date;
}

/** A write that lost to another: the version it expected is not the stored one. */
export class PluginSettingsConflict extends Error {
  constructor(readonly current: number) {
    super(`the settings changed meanwhile (now version ${current}); read them again`);
    this.name = 'PluginSettingsConflict';
  }
}

const record = (value: Prisma.JsonValue): Record<string, unknown> => (value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {});

/** Plugins' settings: written by the admin API, read by the runners' host API for the plugin. */
export class PluginSettingsStore {
  constructor(private readonly prisma: Pick<PrismaClient, 'pluginSetting'>) {}

  /** Every scope with values, the installation's first, then pipelines by id. */
  async scopes(plugin: string): Promise<StoredPluginSettings[]> {
    const rows = await this.prisma.pluginSetting.findMany({ where: { plugin }, orderBy: { scope: 'asc' } });
    return rows.map((r) => ({ scope: r.scope, values: record(r.values), version: r.version, updatedAt: r.updatedAt }));
  }

  async scope(plugin: string, scope: string): Promise<StoredPluginSettings | null> {
    const row = await this.prisma.pluginSetting.findUnique({ where: { plugin_scope: { plugin, scope } } });
    return row ? { scope: row.scope, values: record(row.values), version: row.version, updatedAt: row.updatedAt } : null;
  }

  /** What the plugin runs with: the installation's values, with the pipeline's over them (key by key). */
  async effective(plugin: string, pipelineId: string | undefined): Promise<Record<string, unknown>> {
    const scopes = [INSTALLATION_SCOPE, ...(pipelineId === undefined ? [] : [pipelineId])];
    const rows = await this.prisma.pluginSetting.findMany({ where: { plugin, scope: { in: scopes } } });
    const of = (scope: string) => record(rows.find((r) => r.scope === scope)?.values ?? null);
    return { ...of(INSTALLATION_SCOPE), ...(pipelineId === undefined ? {} : of(pipelineId)) };
  }

  /**
   * Replaces a scope's values if it is still at `expectedVersion` (0: it has none yet); returns the new
   * version. Throws PluginSettingsConflict when another write came first.
   */
  async put(plugin: string, scope: string, values: Record<string, unknown>, expectedVersion: number): Promise<number> {
    const json = values as Prisma.InputJsonObject;
    if (expectedVersion === 0) {
      const created = await this.prisma.pluginSetting.createMany({ data: [{ plugin, scope, values: json }], skipDuplicates: true });
      if (created.count === 1) return 1;
    } else {
      const updated = await this.prisma.pluginSetting.updateMany({ where: { plugin, scope, version: expectedVersion }, data: { values: json, version: { increment: 1 } } });
      if (updated.count === 1) return expectedVersion + 1;
    }
    throw new PluginSettingsConflict((await this.scope(plugin, scope))?.version ?? 0);
  }
}
