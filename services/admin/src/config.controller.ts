import { Body, Controller, Delete, Get, Headers, HttpCode, Inject, Param, Patch, Post, Put, Query } from '@nestjs/common';
import { AdminApi, MODEL_PRESETS } from '@conveyor/contracts';
import { ConfigStore, expectedVersion, maskPipelineConfig, testModel, testMcpServer, type Principal } from '@conveyor/admin';
import { resolveApiKey, type SecretBox } from '@conveyor/persistence';
import { inSpan } from '@conveyor/telemetry';
import { Caller, parse, StorableId, RequireRole } from './http.js';
import { CONFIG_STORE, SECRET_BOX } from './tokens.js';

/** A body's `version`, when the body is an object that has one (the rest is validated by the route's schema). */
function bodyVersion(body: unknown): number | undefined {
  const v = body !== null && typeof body === 'object' ? Reflect.get(body, 'version') : undefined;
  return typeof v === 'number' ? v : undefined;
}

function precondition(ifMatch: string | undefined, body: unknown): number {
  return expectedVersion(ifMatch, bodyVersion(body));
}

@Controller('api/v1/platforms')
export class PlatformsController {
  constructor(@Inject(CONFIG_STORE) private readonly store: ConfigStore) {}

  @Get()
  list(): AdminApi.PlatformList {
    return this.store.listPlatforms();
  }
}

@Controller('api/v1/model-presets')
export class ModelPresetsController {
  @Get()
  list(): AdminApi.ModelPresetList {
    return { items: MODEL_PRESETS.map((p) => ({ ...p, abilities: [...p.abilities] })) };
  }
}

@Controller('api/v1/models')
export class ModelsController {
  constructor(@Inject(CONFIG_STORE) private readonly store: ConfigStore, @Inject(SECRET_BOX) private readonly box: SecretBox) {}

  @Get()
  list(@Query() query: unknown) {
    return this.store.listModels(parse(AdminApi.PageQuery, query, 'query'));
  }

  @Get(':id')
  get(@Param('id', StorableId) id: string) {
    return this.store.getModel(id);
  }

  @Post()
  create(@Caller() caller: Principal, @Body() body: unknown) {
    return this.store.createModel(caller, parse(AdminApi.ModelCreate, body, 'body'));
  }

  @Patch(':id')
  update(@Caller() caller: Principal, @Param('id', StorableId) id: string, @Headers('if-match') ifMatch: string | undefined, @Body() body: unknown) {
    const input = parse(AdminApi.ModelUpdate, body, 'body');
    return this.store.updateModel(caller, id, precondition(ifMatch, input), input);
  }

  @Delete(':id')
  @HttpCode(204)
  async remove(@Caller() caller: Principal, @Param('id', StorableId) id: string, @Headers('if-match') ifMatch: string | undefined, @Body() body: unknown) {
    await this.store.deleteModel(caller, id, precondition(ifMatch, body));
  }

  @Post(':id/test')
  @HttpCode(200)
  async test(@Param('id', StorableId) id: string): Promise<AdminApi.ModelTestResult> {
    const row = await this.store.modelRow(id);
    let apiKey: string | undefined;
    try {
      apiKey = resolveApiKey(row.apiKeyRef, process.env, this.box);
    } catch (err) {
      // The reason names the variable or the key id, never a key.
      return { ok: false, latencyMs: 0, error: `the API key cannot be resolved here: ${(err as Error).message}` };
    }
    return inSpan('admin model test', { 'gen_ai.request.model': row.modelId, 'conveyor.model.id': row.id }, () =>
      testModel({ provider: row.provider, baseUrl: row.baseUrl, modelId: row.modelId, abilities: row.abilities, timeoutMs: row.timeoutMs, apiKey }),
    );
  }
}

@Controller('api/v1/pipelines')
export class PipelinesController {
  constructor(@Inject(CONFIG_STORE) private readonly store: ConfigStore) {}

  @Get()
  list(@Query() query: unknown) {
    return this.store.listPipelines(parse(AdminApi.PageQuery, query, 'query'));
  }

  @Post('validate')
  @RequireRole('viewer')
  @HttpCode(200)
  async validate(@Body() body: unknown): Promise<AdminApi.PipelineValidation> {
    const input = parse(AdminApi.PipelineValidate, body, 'body');
    const checked = await this.store.validatePipeline(input);
    // The config comes back as a stored one would: a viewer may call this, and it echoes secrets.
    return checked.issues.length ? { valid: false, issues: checked.issues } : { valid: true, issues: [], config: maskPipelineConfig(checked.config) as Record<string, unknown> };
  }

  @Get(':id')
  get(@Param('id', StorableId) id: string) {
    return this.store.getPipeline(id);
  }

  @Post()
  create(@Caller() caller: Principal, @Body() body: unknown) {
    return this.store.createPipeline(caller, parse(AdminApi.PipelineCreate, body, 'body'));
  }

  @Patch(':id')
  update(@Caller() caller: Principal, @Param('id', StorableId) id: string, @Headers('if-match') ifMatch: string | undefined, @Body() body: unknown) {
    const { version, ...input } = parse(AdminApi.PipelineUpdate, body, 'body');
    return this.store.updatePipeline(caller, id, expectedVersion(ifMatch, version), input);
  }

  @Post(':id/copy')
  copy(@Caller() caller: Principal, @Param('id', StorableId) id: string, @Body() body: unknown) {
    return this.store.copyPipeline(caller, id, parse(AdminApi.PipelineCopy, body, 'body'));
  }

  @Delete(':id')
  @HttpCode(204)
  async remove(@Caller() caller: Principal, @Param('id', StorableId) id: string, @Headers('if-match') ifMatch: string | undefined, @Body() body: unknown) {
    await this.store.deletePipeline(caller, id, precondition(ifMatch, body));
  }
}

@Controller('api/v1/bots')
export class BotsController {
  constructor(@Inject(CONFIG_STORE) private readonly store: ConfigStore) {}

  @Get()
  list(@Query() query: unknown) {
    return this.store.listBots(parse(AdminApi.PageQuery, query, 'query'));
  }

  @Get(':id')
  get(@Param('id', StorableId) id: string) {
    return this.store.getBot(id);
  }

  @Post()
  create(@Caller() caller: Principal, @Body() body: unknown) {
    return this.store.createBot(caller, parse(AdminApi.BotCreate, body, 'body'));
  }

  @Patch(':id')
  update(@Caller() caller: Principal, @Param('id', StorableId) id: string, @Headers('if-match') ifMatch: string | undefined, @Body() body: unknown) {
    const { version, ...input } = parse(AdminApi.BotUpdate, body, 'body');
    return this.store.updateBot(caller, id, expectedVersion(ifMatch, version), input);
  }

  @Delete(':id')
  @HttpCode(204)
  async remove(@Caller() caller: Principal, @Param('id', StorableId) id: string, @Headers('if-match') ifMatch: string | undefined, @Body() body: unknown) {
    await this.store.deleteBot(caller, id, precondition(ifMatch, body));
  }
}

@Controller('api/v1/mcp-servers')
export class McpServersController {
  constructor(@Inject(CONFIG_STORE) private readonly store: ConfigStore) {}

  @Get()
  list(@Query() query: unknown) {
    return this.store.listMcpServers(parse(AdminApi.PageQuery, query, 'query'));
  }

  @Get(':id')
  get(@Param('id', StorableId) id: string) {
    return this.store.getMcpServer(id);
  }

  @Post()
  create(@Caller() caller: Principal, @Body() body: unknown) {
    return this.store.createMcpServer(caller, parse(AdminApi.McpServerCreate, body, 'body'));
  }

  @Patch(':id')
  update(@Caller() caller: Principal, @Param('id', StorableId) id: string, @Headers('if-match') ifMatch: string | undefined, @Body() body: unknown) {
    const { version, ...input } = parse(AdminApi.McpServerUpdate, body, 'body');
    return this.store.updateMcpServer(caller, id, expectedVersion(ifMatch, version), input);
  }

  @Delete(':id')
  @HttpCode(204)
  async remove(@Caller() caller: Principal, @Param('id', StorableId) id: string, @Headers('if-match') ifMatch: string | undefined, @Body() body: unknown) {
    await this.store.deleteMcpServer(caller, id, precondition(ifMatch, body));
  }

  @Post(':id/test')
  @HttpCode(200)
  async test(@Param('id', StorableId) id: string): Promise<AdminApi.McpServerTestResult> {
    const row = await this.store.mcpServerRow(id);
    return inSpan('admin MCP server test', { 'conveyor.mcp_server.id': row.id }, () => testMcpServer(row));
  }
}

@Controller('api/v1/settings')
export class SettingsController {
  constructor(@Inject(CONFIG_STORE) private readonly store: ConfigStore) {}

  @Get()
  get() {
    return this.store.getSettings();
  }

  @Put()
  update(@Caller() caller: Principal, @Headers('if-match') ifMatch: string | undefined, @Body() body: unknown) {
    const { version, ...values } = parse(AdminApi.InstanceSettingsUpdate, body, 'body');
    return this.store.putSettings(caller, expectedVersion(ifMatch, version), values);
  }
}
