// The admin API's configuration resources: models, pipelines, bots, MCP servers. Every write runs in
// one transaction with its audit row and its version check, marks rows it creates `console` (a file
// apply leaves them alone), and after commit announces the change on the bus so every service drops its
// cached copy. Secrets: model keys are encrypted and never returned; bot, pipeline and MCP settings are
// masked (see masking.ts for which values are secrets), and a masked value sent back keeps the stored one.
import { randomUUID } from 'node:crypto';
import { AdminApi, HumanHandoff, modelPreset, ModelProviderKind, SkillName, type ConfigChanged, type ConfigChangeKind } from '@conveyor/contracts';
import { validateBotSettings, validatePipeline } from '@conveyor/config';
import { encryptedKeyId, isEncrypted, Prisma, type PrismaClient, type SecretBox } from '@conveyor/persistence';
import { defaultPipelineStages } from '@conveyor/pipeline';
import { recordAudit } from './audit.js';
import { deleteVersioned, updateVersioned } from './concurrency.js';
import { AdminApiError, keyPath } from './errors.js';
import { maskBotConfig, maskMcpConfig, maskPipelineConfig, maskSecrets, unmaskSecrets } from './masking.js';
import { platformList } from './deployment.js';
import type { Principal } from './auth.js';

/** `managedBy` of rows created through the API: never retired by a file apply. */
export const CONSOLE_MANAGED = 'console';

/** Where configuration changes are announced (the bus); called after the write committed. */
export interface ConfigChangeSink {
  changed(event: ConfigChanged): Promise<void>;
}

export interface Paged<T> {
  items: T[];
  nextCursor: string | null;
}

type ModelInput = { name?: string; provider?: ModelProviderKind; baseUrl?: string; model?: string; abilities?: string[]; extraArgs?: Record<string, unknown>; timeoutMs?: number; apiKey?: string | null; apiKeyEnv?: string | null; inputPricePerMTok?: number | null; outputPricePerMTok?: number | null };

const iso = (d: Date) => d.toISOString();
const meta = (row: { version: number; managedBy: string; createdAt: Date; updatedAt: Date }) => ({ version: row.version, managedBy: row.managedBy, createdAt: iso(row.createdAt), updatedAt: iso(row.updatedAt) });
/** Values that came through a JSON body or a JSON column are JSON; Prisma's input type cannot know it. */
const json = (value: unknown) => value as Prisma.InputJsonValue;
const record = (value: unknown): Record<string, unknown> => (value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {});
const changedFields = (input: object) => Object.keys(input).filter((k) => k !== 'version' && k !== 'id');

export class ConfigStore {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly box: SecretBox,
    private readonly sink: ConfigChangeSink,
  ) {}

  // ---------------------------------------------------------------- models

  async listModels(page: AdminApi.PageQuery): Promise<Paged<AdminApi.Model>> {
    const rows = await this.prisma.llmModel.findMany({ orderBy: { id: 'asc' }, take: page.limit + 1, ...(page.cursor ? { where: { id: { gt: page.cursor } } } : {}) });
    return paged(rows, page.limit, modelDto);
  }

  async getModel(id: string): Promise<AdminApi.Model> {
    const row = await this.prisma.llmModel.findUnique({ where: { id } });
    if (!row) throw AdminApiError.notFound('model', id);
    return modelDto(row);
  }

  async createModel(actor: Principal, input: AdminApi.ModelCreateInput): Promise<AdminApi.Model> {
    const apiKeyRef = this.apiKeyRef(input) ?? '';
    // A preset fills what the body leaves out: the API, its URL and the usual abilities.
    const preset = input.preset ? modelPreset(input.preset) : undefined;
    const baseUrl = input.baseUrl ?? preset?.baseUrl;
    if (!baseUrl) throw AdminApiError.invalid('body.baseUrl', 'is required (or name a preset)');
    const provider = input.provider ?? preset?.provider ?? 'openai';
    const abilities = input.abilities.length === 0 && preset ? preset.abilities : input.abilities;
    const row = await this.write(async (tx) => {
      if (await tx.llmModel.findUnique({ where: { id: input.id } })) throw exists('model', input.id);
      const created = await tx.llmModel.create({
        data: { id: input.id, name: input.name ?? input.id, provider, baseUrl, modelId: input.model, abilities: [...new Set(abilities)], extraArgs: json(input.extraArgs), timeoutMs: input.timeoutMs, apiKeyRef, managedBy: CONSOLE_MANAGED,
          inputPricePerMTok: input.inputPricePerMTok ?? null, outputPricePerMTok: input.outputPricePerMTok ?? null },
      });
      await recordAudit(tx, { actor: actor.actor, resource: 'model', resourceId: created.id, action: 'create', versionAfter: created.version, changes: changedFields(input) });
      return created;
    });
    await this.announce('model', row.id, row.version);
    return modelDto(row);
  }

  async updateModel(actor: Principal, id: string, expected: number, input: ModelInput): Promise<AdminApi.Model> {
    const apiKeyRef = this.apiKeyRef(input);
    const data = {
      ...(input.name !== undefined ? { name: input.name } : {}),
      ...(input.provider !== undefined ? { provider: input.provider } : {}),
      ...(input.baseUrl !== undefined ? { baseUrl: input.baseUrl } : {}),
      ...(input.model !== undefined ? { modelId: input.model } : {}),
      ...(input.abilities !== undefined ? { abilities: [...new Set(input.abilities)] } : {}),
      ...(input.extraArgs !== undefined ? { extraArgs: json(input.extraArgs) } : {}),
      ...(input.timeoutMs !== undefined ? { timeoutMs: input.timeoutMs } : {}),
      ...(apiKeyRef !== undefined ? { apiKeyRef } : {}),
      ...(input.inputPricePerMTok !== undefined ? { inputPricePerMTok: input.inputPricePerMTok } : {}),
      ...(input.outputPricePerMTok !== undefined ? { outputPricePerMTok: input.outputPricePerMTok } : {}),
    };
    const after = await this.write(async (tx) => {
      const result = await updateVersioned(tx.llmModel, 'model', id, expected, data);
      await recordAudit(tx, { actor: actor.actor, resource: 'model', resourceId: id, action: 'update', versionBefore: result.before.version, versionAfter: result.after.version, changes: changedFields(input) });
      return result.after;
    });
    await this.announce('model', id, after.version);
    return modelDto(after);
  }

  async deleteModel(actor: Principal, id: string, expected: number): Promise<void> {
    await this.write(async (tx) => {
      const users = (await tx.pipeline.findMany({ select: { id: true, config: true } })).filter((p) => modelIdsNamedBy(p.config).includes(id)).map((p) => p.id);
      if (users.length) throw new AdminApiError('conflict', `model ${JSON.stringify(id)} is used by pipeline(s) ${users.join(', ')}; change them first`, { field: 'path.id' });
      const before = await deleteVersioned(tx.llmModel, 'model', id, expected);
      await recordAudit(tx, { actor: actor.actor, resource: 'model', resourceId: id, action: 'delete', versionBefore: before.version });
    });
    await this.announce('model', id, 0);
  }

  /** The model's row, for a test call (the key decrypted by the caller). */
  async modelRow(id: string) {
    const row = await this.prisma.llmModel.findUnique({ where: { id } });
    if (!row) throw AdminApiError.notFound('model', id);
    return row;
  }

  /**
   * Re-encrypts the model keys made with an older key (after CONVEYOR_SECRET_KEY changed and the old
   * key moved to CONVEYOR_SECRET_KEY_PREVIOUS). Returns the ids rewritten.
   */
  async reencryptModelKeys(): Promise<string[]> {
    if (!this.box.canEncrypt) return [];
    const rows = await this.prisma.llmModel.findMany({ where: { apiKeyRef: { startsWith: 'enc:' } }, select: { id: true, apiKeyRef: true, version: true } });
    const done: string[] = [];
    for (const row of rows) {
      if (!this.box.needsReencryption(row.apiKeyRef)) continue;
      const apiKeyRef = this.box.encrypt(this.box.decrypt(row.apiKeyRef));
      // Same version check as any write: a concurrent edit wins, and the next start tries again.
      const { count } = await this.prisma.llmModel.updateMany({ where: { id: row.id, version: row.version }, data: { apiKeyRef, version: { increment: 1 } } });
      if (count === 1) {
        done.push(row.id);
        await this.announce('model', row.id, row.version + 1);
      }
    }
    return done;
  }

  private apiKeyRef(input: ModelInput): string | undefined {
    if (input.apiKey != null && input.apiKeyEnv != null) throw AdminApiError.invalid('body.apiKey', 'give apiKey or apiKeyEnv, not both');
    if (input.apiKey) {
      if (!this.box.canEncrypt) throw AdminApiError.invalid('body.apiKey', 'the admin service has no CONVEYOR_SECRET_KEY, so it cannot store a key; set it, or use apiKeyEnv');
      return this.box.encrypt(input.apiKey);
    }
    if (input.apiKeyEnv) return `env:${input.apiKeyEnv}`;
    if (input.apiKey === null || input.apiKeyEnv === null) return '';
    return undefined;
  }

  // ---------------------------------------------------------------- pipelines

  async listPipelines(page: AdminApi.PageQuery): Promise<Paged<AdminApi.Pipeline>> {
    const rows = await this.prisma.pipeline.findMany({ orderBy: { id: 'asc' }, take: page.limit + 1, include: { bots: { select: { id: true } } }, ...(page.cursor ? { where: { id: { gt: page.cursor } } } : {}) });
    return paged(rows, page.limit, pipelineDto);
  }

  async getPipeline(id: string): Promise<AdminApi.Pipeline> {
    const row = await this.prisma.pipeline.findUnique({ where: { id }, include: { bots: { select: { id: true } } } });
    if (!row) throw AdminApiError.notFound('pipeline', id);
    return pipelineDto(row);
  }

  /** The checks of a create or update, without saving; issue paths relative to the body. */
  async validatePipeline(input: { config?: Record<string, unknown>; stages?: string[]; extensionsPreferences?: { mcp_servers?: string[] } }) {
    const [models, mcpServers] = await Promise.all([this.prisma.llmModel.findMany({ select: { id: true } }), this.prisma.mcpServer.findMany({ select: { id: true } })]);
    return validatePipeline(
      { config: input.config, stages: input.stages, mcpServers: input.extensionsPreferences?.mcp_servers },
      { modelIds: new Set(models.map((m) => m.id)), mcpServerIds: new Set(mcpServers.map((m) => m.id)) },
    );
  }

  async createPipeline(actor: Principal, input: AdminApi.PipelineCreateInput): Promise<AdminApi.Pipeline> {
    const checked = await this.checkedPipeline({ ...input, config: input.config === undefined ? undefined : record(unmaskSecrets(input.config, {}, 'body.config')) });
    const row = await this.write(async (tx) => {
      if (await tx.pipeline.findUnique({ where: { id: input.id } })) throw exists('pipeline', input.id);
      const created = await tx.pipeline.create({
        data: {
          id: input.id,
          name: input.name ?? input.id,
          stages: json(checked.stages ?? defaultPipelineStages()),
          config: json(checked.config),
          // A new pipeline opts into MCP servers: without the key it binds only those it lists.
          extensionsPreferences: json(preferences(input.extensionsPreferences, false)),
          managedBy: CONSOLE_MANAGED,
        },
        include: { bots: { select: { id: true } } },
      });
      await recordAudit(tx, { actor: actor.actor, resource: 'pipeline', resourceId: created.id, action: 'create', versionAfter: created.version, changes: changedFields(input) });
      return created;
    });
    await this.announce('pipeline', row.id, row.version);
    return pipelineDto(row);
  }

  async updatePipeline(actor: Principal, id: string, expected: number, input: Omit<AdminApi.PipelineUpdateInput, 'version'>): Promise<AdminApi.Pipeline> {
    // Masked runner secrets sent back keep the stored ones. Read before the write: if the row changes
    // in between, its version moves and the write below fails with a conflict, so no secret is mixed up.
    if (input.config !== undefined) {
      const stored = await this.prisma.pipeline.findUnique({ where: { id }, select: { config: true } });
      if (!stored) throw AdminApiError.notFound('pipeline', id);
      input = { ...input, config: record(unmaskSecrets(input.config, stored.config, 'body.config')) };
    }
    const checked = await this.checkedPipeline(input);
    // Preferences sent without enable_all_mcp_servers, or without the skill binding, keep the stored
    // values (read as LangBot reads them).
    let kept: Pick<AdminApi.Pipeline['extensionsPreferences'], 'enable_all_mcp_servers' | 'enable_all_skills' | 'skills'> | undefined;
    const sent = input.extensionsPreferences;
    if (sent !== undefined && (sent.enable_all_mcp_servers === undefined || sent.enable_all_skills === undefined || sent.skills === undefined)) {
      const stored = await this.prisma.pipeline.findUnique({ where: { id }, select: { extensionsPreferences: true } });
      if (!stored) throw AdminApiError.notFound('pipeline', id);
      kept = preferences(record(stored.extensionsPreferences));
    }
    const data = {
      ...(input.name !== undefined ? { name: input.name } : {}),
      ...(input.stages !== undefined ? { stages: json(checked.stages) } : {}),
      ...(input.config !== undefined ? { config: json(checked.config) } : {}),
      ...(sent !== undefined
        ? { extensionsPreferences: json(preferences({ ...sent, enable_all_skills: sent.enable_all_skills ?? kept?.enable_all_skills, skills: sent.skills ?? kept?.skills }, kept?.enable_all_mcp_servers)) }
        : {}),
    };
    const after = await this.write(async (tx) => {
      const result = await updateVersioned(tx.pipeline, 'pipeline', id, expected, data);
      await recordAudit(tx, { actor: actor.actor, resource: 'pipeline', resourceId: id, action: 'update', versionBefore: result.before.version, versionAfter: result.after.version, changes: changedFields(input) });
      return result.after;
    });
    await this.announce('pipeline', id, after.version);
    return this.getPipeline(id);
  }

  async copyPipeline(actor: Principal, id: string, input: { id: string; name?: string }): Promise<AdminApi.Pipeline> {
    const row = await this.write(async (tx) => {
      const source = await tx.pipeline.findUnique({ where: { id } });
      if (!source) throw AdminApiError.notFound('pipeline', id);
      if (await tx.pipeline.findUnique({ where: { id: input.id } })) throw exists('pipeline', input.id);
      const created = await tx.pipeline.create({
        data: { id: input.id, name: input.name ?? `${source.name} (copy)`, stages: json(source.stages), config: json(source.config), extensionsPreferences: json(source.extensionsPreferences), managedBy: CONSOLE_MANAGED },
        include: { bots: { select: { id: true } } },
      });
      await recordAudit(tx, { actor: actor.actor, resource: 'pipeline', resourceId: created.id, action: 'copy', versionAfter: created.version, changes: [`from:${id}`] });
      return created;
    });
    await this.announce('pipeline', row.id, row.version);
    return pipelineDto(row);
  }

  async deletePipeline(actor: Principal, id: string, expected: number): Promise<void> {
    await this.write(async (tx) => {
      const bots = await tx.bot.findMany({ where: { pipelineId: id }, select: { id: true } });
      if (bots.length) throw new AdminApiError('conflict', `pipeline ${JSON.stringify(id)} is used by bot(s) ${bots.map((b) => b.id).join(', ')}; move them first`, { field: 'path.id' });
      const before = await deleteVersioned(tx.pipeline, 'pipeline', id, expected);
      await recordAudit(tx, { actor: actor.actor, resource: 'pipeline', resourceId: id, action: 'delete', versionBefore: before.version });
    });
    await this.announce('pipeline', id, 0);
  }

  private async checkedPipeline(input: { config?: Record<string, unknown>; stages?: string[]; extensionsPreferences?: { mcp_servers?: string[] } }) {
    const checked = await this.validatePipeline(input);
    if (checked.issues.length) {
      const issues = checked.issues.map((i) => ({ path: `body.${i.path}`, message: i.message }));
      const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
      throw new AdminApiError('validation_failed', `${issues[0].path}: ${issues[0].message}${more}`, { field: issues[0].path, issues });
    }
    return checked;
  }

  // ---------------------------------------------------------------- bots

  /** The adapters a bot may have, as the platform registry names them. */
  listPlatforms(): AdminApi.PlatformList {
    return platformList();
  }

  async listBots(page: AdminApi.PageQuery): Promise<Paged<AdminApi.Bot>> {
    const rows = await this.prisma.bot.findMany({ orderBy: { id: 'asc' }, take: page.limit + 1, ...(page.cursor ? { where: { id: { gt: page.cursor } } } : {}) });
    return paged(rows, page.limit, botDto);
  }

  async getBot(id: string): Promise<AdminApi.Bot> {
    const row = await this.prisma.bot.findUnique({ where: { id } });
    if (!row) throw AdminApiError.notFound('bot', id);
    return botDto(row);
  }

  async createBot(actor: Principal, input: AdminApi.BotCreateInput): Promise<AdminApi.Bot> {
    input = { ...input, adapterConfig: record(unmaskSecrets(input.adapterConfig, {}, 'body.adapterConfig')) };
    checkAdapterConfig(input.adapter, input.adapterConfig);
    const id = input.id ?? randomUUID();
    const row = await this.write(async (tx) => {
      if (await tx.bot.findUnique({ where: { id } })) throw exists('bot', id);
      if (!(await tx.pipeline.findUnique({ where: { id: input.pipelineId } }))) throw AdminApiError.invalid('body.pipelineId', `unknown pipeline ${JSON.stringify(input.pipelineId)}`);
      const humanHandoff = storableHandoff(input.humanHandoff, null);
      const created = await tx.bot.create({ data: { id, name: input.name, adapter: input.adapter, adapterConfig: json(input.adapterConfig), pipelineId: input.pipelineId, enabled: input.enabled, humanHandoff: humanHandoff ?? Prisma.DbNull, managedBy: CONSOLE_MANAGED } });
      await recordAudit(tx, { actor: actor.actor, resource: 'bot', resourceId: id, action: 'create', versionAfter: created.version, changes: changedFields(input) });
      return created;
    });
    await this.announce('bot', row.id, row.version);
    return botDto(row);
  }

  async updateBot(actor: Principal, id: string, expected: number, input: Omit<AdminApi.BotUpdateInput, 'version'>): Promise<AdminApi.Bot> {
    const after = await this.write(async (tx) => {
      const stored = await tx.bot.findUnique({ where: { id } });
      if (!stored) throw AdminApiError.notFound('bot', id);
      const adapterConfig = input.adapterConfig === undefined ? undefined : record(unmaskSecrets(input.adapterConfig, stored.adapterConfig, 'body.adapterConfig'));
      if (adapterConfig) checkAdapterConfig(stored.adapter, adapterConfig);
      if (input.pipelineId !== undefined && !(await tx.pipeline.findUnique({ where: { id: input.pipelineId } }))) {
        throw AdminApiError.invalid('body.pipelineId', `unknown pipeline ${JSON.stringify(input.pipelineId)}`);
      }
      const data = {
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(adapterConfig !== undefined ? { adapterConfig: json(adapterConfig) } : {}),
        ...(input.pipelineId !== undefined ? { pipelineId: input.pipelineId } : {}),
        ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
        ...(input.humanHandoff !== undefined ? { humanHandoff: storableHandoff(input.humanHandoff, stored.humanHandoff) ?? Prisma.DbNull } : {}),
      };
      const result = await updateVersioned(tx.bot, 'bot', id, expected, data);
      const action = Object.keys(input).length === 1 && input.enabled !== undefined ? (input.enabled ? 'enable' : 'disable') : 'update';
      await recordAudit(tx, { actor: actor.actor, resource: 'bot', resourceId: id, action, versionBefore: result.before.version, versionAfter: result.after.version, changes: changedFields(input) });
      return result.after;
    });
    await this.announce('bot', id, after.version);
    return botDto(after);
  }

  async deleteBot(actor: Principal, id: string, expected: number): Promise<void> {
    await this.write(async (tx) => {
      const before = await deleteVersioned(tx.bot, 'bot', id, expected);
      await recordAudit(tx, { actor: actor.actor, resource: 'bot', resourceId: id, action: 'delete', versionBefore: before.version });
    });
    await this.announce('bot', id, 0);
  }

  // ---------------------------------------------------------------- MCP servers

  async listMcpServers(page: AdminApi.PageQuery): Promise<Paged<AdminApi.McpServer>> {
    const rows = await this.prisma.mcpServer.findMany({ orderBy: { id: 'asc' }, take: page.limit + 1, ...(page.cursor ? { where: { id: { gt: page.cursor } } } : {}) });
    return paged(rows, page.limit, mcpDto);
  }

  async getMcpServer(id: string): Promise<AdminApi.McpServer> {
    return mcpDto(await this.mcpServerRow(id));
  }

  /** The stored row, secrets included: for the connection test only. */
  async mcpServerRow(id: string) {
    const row = await this.prisma.mcpServer.findUnique({ where: { id } });
    if (!row) throw AdminApiError.notFound('MCP server', id);
    return row;
  }

  async createMcpServer(actor: Principal, input: AdminApi.McpServerCreateInput): Promise<AdminApi.McpServer> {
    input = { ...input, config: record(unmaskSecrets(input.config, {}, 'body.config')) };
    const row = await this.write(async (tx) => {
      if (await tx.mcpServer.findUnique({ where: { id: input.id } })) throw exists('MCP server', input.id);
      const created = await tx.mcpServer.create({ data: { id: input.id, name: input.name ?? input.id, transport: input.transport, config: json(input.config), enabled: input.enabled, managedBy: CONSOLE_MANAGED } });
      await recordAudit(tx, { actor: actor.actor, resource: 'mcp-server', resourceId: created.id, action: 'create', versionAfter: created.version, changes: changedFields(input) });
      return created;
    });
    await this.announce('mcp-server', row.id, row.version);
    return mcpDto(row);
  }

  async updateMcpServer(actor: Principal, id: string, expected: number, input: Omit<AdminApi.McpServerUpdateInput, 'version'>): Promise<AdminApi.McpServer> {
    const after = await this.write(async (tx) => {
      const stored = await tx.mcpServer.findUnique({ where: { id } });
      if (!stored) throw AdminApiError.notFound('MCP server', id);
      const config = input.config === undefined ? undefined : record(unmaskSecrets(input.config, stored.config, 'body.config'));
      const data = {
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.transport !== undefined ? { transport: input.transport } : {}),
        ...(config !== undefined ? { config: json(config) } : {}),
        ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
      };
      const result = await updateVersioned(tx.mcpServer, 'MCP server', id, expected, data);
      await recordAudit(tx, { actor: actor.actor, resource: 'mcp-server', resourceId: id, action: 'update', versionBefore: result.before.version, versionAfter: result.after.version, changes: changedFields(input) });
      return result.after;
    });
    await this.announce('mcp-server', id, after.version);
    return mcpDto(after);
  }

  async deleteMcpServer(actor: Principal, id: string, expected: number): Promise<void> {
    await this.write(async (tx) => {
      const before = await deleteVersioned(tx.mcpServer, 'MCP server', id, expected);
      await recordAudit(tx, { actor: actor.actor, resource: 'mcp-server', resourceId: id, action: 'delete', versionBefore: before.version });
    });
    await this.announce('mcp-server', id, 0);
  }

  // ---------------------------------------------------------------- instance settings

  async getSettings(): Promise<AdminApi.InstanceSettings> {
    return settingsDto(await this.settingsRow(this.prisma));
  }

  /** Replaces every value (PUT): one left out or null goes back to the services' own default. */
  async putSettings(actor: Principal, expected: number, input: AdminApi.InstanceSettingsValues): Promise<AdminApi.InstanceSettings> {
    const after = await this.write(async (tx) => {
      const id = AdminApi.INSTANCE_SETTINGS_ID;
      await this.settingsRow(tx);
      const { before, after: row } = await updateVersioned(tx.instanceSettings, 'settings', id, expected, { values: json(input) });
      const old = AdminApi.storedSettings(before.values);
      const changes = [
        ...(JSON.stringify(old.command.enable) !== JSON.stringify(input.command.enable) ? ['command.enable'] : []),
        ...(JSON.stringify(old.command.prefix) !== JSON.stringify(input.command.prefix) ? ['command.prefix'] : []),
        ...(JSON.stringify(old.banWords) !== JSON.stringify(input.banWords) ? ['banWords'] : []),
        ...(old.monitoring.showMessageText !== input.monitoring.showMessageText ? ['monitoring.showMessageText'] : []),
      ];
      await recordAudit(tx, { actor: actor.actor, resource: 'settings', resourceId: id, action: 'update', versionBefore: before.version, versionAfter: row.version, changes });
      return row;
    });
    await this.announce('settings', AdminApi.INSTANCE_SETTINGS_ID, after.version);
    return settingsDto(after);
  }

  /** The row, created at version 1 (nothing set) the first time anyone reads it. */
  private async settingsRow(db: Pick<Prisma.TransactionClient, 'instanceSettings'>) {
    const id = AdminApi.INSTANCE_SETTINGS_ID;
    const row = await db.instanceSettings.findUnique({ where: { id } });
    if (row) return row;
    await db.instanceSettings.createMany({ data: [{ id, values: json(AdminApi.storedSettings({})) }], skipDuplicates: true });
    const created = await db.instanceSettings.findUnique({ where: { id } });
    if (!created) throw new AdminApiError('internal', 'the instance settings row could not be created');
    return created;
  }

  // ---------------------------------------------------------------- shared

  private write<T>(fn: (tx: Prisma.TransactionClient) => Promise<T>): Promise<T> {
    return this.prisma.$transaction(fn, { maxWait: 10_000, timeout: 30_000 });
  }

  private announce(kind: ConfigChangeKind, id: string, revision: number): Promise<void> {
    return this.sink.changed({ version: 1, kind, id, revision });
  }
}

function exists(resource: string, id: string): AdminApiError {
  return new AdminApiError('conflict', `body.id: ${resource} ${JSON.stringify(id)} exists`, { field: 'body.id' });
}

function paged<Row extends { id: string }, T>(rows: Row[], limit: number, dto: (row: Row) => T): Paged<T> {
  const more = rows.length > limit;
  const page = more ? rows.slice(0, limit) : rows;
  return { items: page.map(dto), nextCursor: more ? page[page.length - 1].id : null };
}

/**
 * Complete preferences. `enableAllMcpWhenAbsent`: what a missing `enable_all_mcp_servers` means;
 * true (LangBot's reading) for stored rows, false when a new pipeline is written.
 */
function preferences(input: Partial<AdminApi.Pipeline['extensionsPreferences']> | undefined, enableAllMcpWhenAbsent = true): AdminApi.Pipeline['extensionsPreferences'] {
  const skills = Array.isArray(input?.skills) ? input.skills : [];
  return {
    enable_all_mcp_servers: input?.enable_all_mcp_servers ?? enableAllMcpWhenAbsent,
    mcp_servers: [...new Set(input?.mcp_servers ?? [])],
    enable_all_plugins: input?.enable_all_plugins ?? true,
    plugins: [...new Set(input?.plugins ?? [])],
    // LangBot's reading: absent binds every installed skill. A stored name that is no skill name
    // (written by hand) can name no skill and is left out.
    enable_all_skills: input?.enable_all_skills ?? true,
    skills: [...new Set(skills.filter((name) => SkillName.safeParse(name).success))],
  };
}

/** The platform's own schema (the check setup makes on a conveyor.yaml bot), so a bot the API accepts is a bot the services can run. */
function checkAdapterConfig(adapter: string, config: Record<string, unknown>): void {
  const found = validateBotSettings(adapter, config);
  if (found.length === 0) return;
  const issues = found.map((i) => ({ path: i.on === 'adapter' ? 'body.adapter' : keyPath(['body', 'adapterConfig', ...i.path]), message: i.message }));
  throw new AdminApiError('validation_failed', `${issues[0].path}: ${issues[0].message}`, { field: issues[0].path, issues });
}

/** The model ids a stored pipeline config names (a plain id, or `primary` and `fallbacks`). */
export function modelIdsNamedBy(config: unknown): string[] {
  const model = record(record(record(config).ai)['local-agent']).model;
  if (typeof model === 'string') return [model];
  const m = record(model);
  const fallbacks = Array.isArray(m.fallbacks) ? m.fallbacks.filter((id): id is string => typeof id === 'string') : [];
  return typeof m.primary === 'string' ? [m.primary, ...fallbacks] : fallbacks;
}

export function modelDto(row: { id: string; name: string; provider: string; baseUrl: string; modelId: string; abilities: string[]; extraArgs: unknown; timeoutMs: number; apiKeyRef: string; inputPricePerMTok: number | null; outputPricePerMTok: number | null; version: number; managedBy: string; createdAt: Date; updatedAt: Date }): AdminApi.Model {
  const apiKey: AdminApi.Model['apiKey'] = row.apiKeyRef === ''
    ? { source: 'none' }
    : isEncrypted(row.apiKeyRef)
      ? { source: 'encrypted', keyId: encryptedKeyId(row.apiKeyRef) }
      : { source: 'env', env: row.apiKeyRef.replace(/^env:/, '') };
  return {
    id: row.id,
    name: row.name,
    // A kind this admin does not know (a newer writer) reads as what it was before kinds existed.
    provider: ModelProviderKind.safeParse(row.provider).data ?? 'openai',
    baseUrl: row.baseUrl,
    model: row.modelId,
    abilities: row.abilities.filter((a): a is AdminApi.Model['abilities'][number] => ['func_call', 'vision', 'embedding', 'rerank'].includes(a)),
    extraArgs: record(row.extraArgs),
    timeoutMs: row.timeoutMs,
    apiKey,
    inputPricePerMTok: row.inputPricePerMTok,
    outputPricePerMTok: row.outputPricePerMTok,
    ...meta(row),
  };
}

function pipelineDto(row: { id: string; name: string; stages: unknown; config: unknown; extensionsPreferences: unknown; bots: Array<{ id: string }>; version: number; managedBy: string; createdAt: Date; updatedAt: Date }): AdminApi.Pipeline {
  return {
    id: row.id,
    name: row.name,
    stages: Array.isArray(row.stages) ? row.stages.filter((s): s is string => typeof s === 'string') : [],
    config: record(maskPipelineConfig(row.config)),
    extensionsPreferences: preferences(record(row.extensionsPreferences)),
    botIds: row.bots.map((b) => b.id),
    ...meta(row),
  };
}

function botDto(row: { id: string; name: string; adapter: string; adapterConfig: unknown; pipelineId: string; enabled: boolean; humanHandoff: unknown; version: number; managedBy: string; createdAt: Date; updatedAt: Date }): AdminApi.Bot {
  const handoff = row.humanHandoff == null ? null : HumanHandoff.safeParse(row.humanHandoff);
  const humanHandoff = handoff?.success ? { ...handoff.data, webhookUrl: handoff.data.webhookUrl === null ? null : String(maskSecrets(handoff.data.webhookUrl, true)) } : null;
  return { id: row.id, name: row.name, adapter: row.adapter, adapterConfig: record(maskBotConfig(row.adapter, row.adapterConfig)), pipelineId: row.pipelineId, enabled: row.enabled, humanHandoff, ...meta(row) };
}

/** A bot's `humanHandoff` as it is stored: its masked webhook URL replaced by the stored one, and the URL checked. */
function storableHandoff(input: AdminApi.BotHumanHandoff | null, stored: unknown): HumanHandoff | null {
  if (input === null) return null;
  const parsed = HumanHandoff.safeParse(unmaskSecrets(input, stored ?? {}, 'body.humanHandoff'));
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw AdminApiError.invalid(keyPath(['body', 'humanHandoff', ...(issue?.path ?? []).map(String)]), issue?.message ?? 'is not valid');
}

function mcpDto(row: { id: string; name: string; transport: string; config: unknown; enabled: boolean; version: number; managedBy: string; createdAt: Date; updatedAt: Date }): AdminApi.McpServer {
  return { id: row.id, name: row.name, transport: row.transport, config: record(maskMcpConfig(row.config)), enabled: row.enabled, ...meta(row) };
}


function settingsDto(row: { values: unknown; version: number; updatedAt: Date }): AdminApi.InstanceSettings {
  return { ...AdminApi.storedSettings(row.values), version: row.version, updatedAt: iso(row.updatedAt) };
}
