import { Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { OpenAIClientPool, PluginHostApi, PluginHostError } from '@conveyor/agent';
import { PluginHostServer, requestDirectSend } from '@conveyor/bus';
import { PluginAccess } from '@conveyor/config-read-model';
import { KnowledgeStore, PluginSettingsStore, PluginStorage, PluginStorageError } from '@conveyor/persistence';
import { INFRA } from '@conveyor/service-kit';
import { currentTraceId } from '@conveyor/telemetry';
import { ModelDirectory } from './model-directory.js';
import type { RunnerInfra } from './env.js';

/**
 * The plugin host API on the runner, which holds what plugins ask for: the models' keys, the
 * knowledge store and the database. Wiring only: the behaviour is PluginHostApi's, the transport
 * PluginHostServer's.
 */
@Injectable()
export class PluginHostApiServer implements OnModuleInit, OnModuleDestroy {
  private readonly server: PluginHostServer;

  constructor(@Inject(INFRA) infra: RunnerInfra, models: ModelDirectory) {
    const storage = new PluginStorage(infra.db);
    const access = new PluginAccess(infra.db.prisma);
    const settings = new PluginSettingsStore(infra.db.prisma);
    const api = new PluginHostApi({
      storage: {
        get: (plugin, key) => storage.get(plugin, key),
        set: async (plugin, key, value) => {
          try {
            return await storage.set(plugin, key, value);
          } catch (err) {
            if (err instanceof PluginStorageError) throw new PluginHostError('too_large', err.message);
            throw err;
          }
        },
        delete: (plugin, key) => storage.delete(plugin, key),
        keys: (plugin, prefix) => storage.keys(plugin, prefix),
      },
      pipeline: (plugin, id) => access.pipeline(plugin, id),
      retrievesFrom: (plugin, id) => access.retrievesFrom(plugin, id),
      bot: (plugin, id) => access.bot(plugin, id),
      sendToChat: (request) => requestDirectSend(infra.nc, infra.topology.prefix, request),
      settings: (plugin, pipelineId) => settings.effective(plugin, pipelineId),
      resolveModels: (selection) => models.resolve(selection),
      model: (id) => models.find(id),
      knowledge: new KnowledgeStore(infra.db),
      pool: new OpenAIClientPool(),
      audit: async (entry) => {
        await infra.db.prisma.auditEntry.create({ data: { actor: `plugin:${entry.plugin}`, resource: 'plugin-host', resourceId: entry.resource, action: `refused ${entry.op}`, changes: [entry.reason.slice(0, 500)] } });
      },
      logger: infra.logger,
    });
    this.server = new PluginHostServer(infra.nc, infra.topology.prefix, async (request, emit, signal) => ({ ...(await api.handle(request, emit, signal)) }), {
      logger: infra.logger,
      classify: (err) => (err instanceof PluginHostError ? { code: err.code, message: err.message } : undefined),
      traceId: currentTraceId,
    });
  }

  async onModuleInit(): Promise<void> {
    await this.server.start();
  }

  onModuleDestroy(): void {
    this.server.stop();
  }
}
