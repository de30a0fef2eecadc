import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, DiscoveryModule } from '@nestjs/core';
import { AuthStore, ConfigStore, DeadLetters, KnowledgeBases, Skills, type ConfigChangeSink } from '@conveyor/admin';
import { publishConfigChanged } from '@conveyor/bus';
import { IngestJob } from '@conveyor/contracts';
import { KnowledgeStore, SandboxWorkspaceStore, SkillStore } from '@conveyor/persistence';
import type { SecretBox } from '@conveyor/persistence';
import type { Infra } from '@conveyor/service-kit';
import { AuthController } from './auth.controller.js';
import { BotsController, McpServersController, ModelPresetsController, ModelsController, PipelinesController, PlatformsController, SettingsController } from './config.controller.js';
import { AdminAuthGuard, AdminErrorFilter, AUTH_STORE } from './http.js';
import { RecordsController } from './records.controller.js';
import { MonitoringController } from './monitoring.controller.js';
import { RoutesController } from './routes.controller.js';
import { DebugChatController } from './debug-chat.controller.js';
import { ADMIN_SETTINGS, type AdminSettings } from './settings.js';
import { CONFIG_STORE, DEAD_LETTERS, KNOWLEDGE_BASES, SECRET_BOX, SKILLS, TAKEOVERS } from './tokens.js';
import { KnowledgeBasesController } from './knowledge.controller.js';
import { BotEndpointController, PluginDirectory, PluginsController } from './deployment.controller.js';
import { UsersController } from './users.controller.js';
import { SandboxWorkspacesController, SkillsController } from './skills.controller.js';
import { McpController } from './mcp.controller.js';
import { LiveController, LiveFeed } from './live.controller.js';
import { HumanRequestController, TakeoverController, takeovers } from './takeover.controller.js';

export interface AdminParts {
  auth: AuthStore;
  box: SecretBox;
  settings: AdminSettings;
}

/**
 * Publishes after commit and waits until NATS has it, so the change is ahead of any message sent after
 * the API answered. A failed publish is logged (the safety TTL still bounds staleness).
 */
export function configChangeSink(infra: Infra): ConfigChangeSink {
  return {
    changed: async (event) => {
      try {
        publishConfigChanged(infra.nc, infra.topology.subjects.configChanged, event);
        await infra.nc.flush();
      } catch (err) {
        infra.logger.error({ err, event }, 'config change not announced; services see it within the cache safety TTL');
      }
    },
  };
}

export function configStore(infra: Infra, box: SecretBox): ConfigStore {
  return new ConfigStore(infra.prisma, box, configChangeSink(infra));
}

/** Skills and sandbox workspaces; a skill's change is announced like any other configuration's. */
export function skills(infra: Infra): Skills {
  return new Skills(infra.prisma, new SkillStore(infra.db), new SandboxWorkspaceStore(infra.db), configChangeSink(infra));
}

/**
 * Ingestion runs on the runner, which holds the embedding models' keys and the bounded ingest consumer;
 * the admin stores the document and publishes its job (the document and revision are the job's
 * de-duplication id, as the runner's sweep uses). A lost publish is left to that sweep.
 */
export function knowledgeBases(infra: Infra, plugins: PluginDirectory): KnowledgeBases {
  return new KnowledgeBases(infra.prisma, new KnowledgeStore(infra.db), async (job) => {
    try {
      await infra.publisher.publish(infra.topology.subjects.ingest(job.knowledgeBaseId), IngestJob, { v: 1, documentId: job.documentId, revision: job.revision }, { msgId: `ingest:${job.documentId}:${job.revision}` });
    } catch (err) {
      infra.logger.warn({ err: (err as Error).message, documentId: job.documentId }, 'ingestion job not published; a runner\'s sweep publishes it');
    }
  }, (plugin) => plugins.host.registrations().find((r) => r.registration.name === plugin)?.registration.retrievers.map((r) => r.name) ?? null);
}

@Module({})
export class AdminModule {
  static register(infra: Infra, parts: AdminParts): DynamicModule {
    return {
      module: AdminModule,
      imports: [DiscoveryModule],
      controllers: [AuthController, UsersController, ModelsController, ModelPresetsController, PipelinesController, PlatformsController, BotsController, McpServersController, SettingsController, RecordsController, MonitoringController, DebugChatController, RoutesController, KnowledgeBasesController, BotEndpointController, PluginsController, SkillsController, SandboxWorkspacesController, McpController, LiveController, TakeoverController, HumanRequestController],
      providers: [
        { provide: AUTH_STORE, useValue: parts.auth },
        { provide: SECRET_BOX, useValue: parts.box },
        { provide: ADMIN_SETTINGS, useValue: parts.settings },
        { provide: CONFIG_STORE, useValue: configStore(infra, parts.box) },
        { provide: DEAD_LETTERS, useValue: new DeadLetters(infra.js, infra.jsm, infra.topology.streams.deadLetters) },
        { provide: KNOWLEDGE_BASES, useFactory: (plugins: PluginDirectory) => knowledgeBases(infra, plugins), inject: [PluginDirectory] },
        { provide: SKILLS, useValue: skills(infra) },
        { provide: TAKEOVERS, useValue: takeovers(infra) },
        PluginDirectory,
        LiveFeed,
        { provide: APP_GUARD, useClass: AdminAuthGuard },
        { provide: APP_FILTER, useClass: AdminErrorFilter },
      ],
    };
  }
}
