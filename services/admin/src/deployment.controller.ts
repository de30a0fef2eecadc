import { Body, Controller, Get, Inject, Injectable, Param, Put, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { AdminApi, PluginName, PluginSettingsChanged } from '@conveyor/contracts';
import { AdminApiError, botEndpoint, pluginList, PluginSettings, type Principal } from '@conveyor/admin';
import { PluginSettingsStore } from '@conveyor/persistence';
import { PluginCallStats } from '@conveyor/message-state';
import { PluginHost } from '@conveyor/bus';
import { readConnectionLease } from '@conveyor/gateway';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { Caller, parse, StorableId } from './http.js';
import { ADMIN_SETTINGS, type AdminSettings } from './settings.js';

/**
 * The plugins' heartbeats as this replica hears them: the same bounded, expiring registry the
 * orchestrator and dispatcher keep (PluginHost), asking every plugin for a heartbeat at start, so a
 * fresh replica lists them at once. Nothing persists registrations: a plugin is registered while it beats.
 */
@Injectable()
export class PluginDirectory implements OnModuleInit, OnModuleDestroy {
  readonly host: PluginHost;

  constructor(@Inject(INFRA) infra: Infra) {
    this.host = new PluginHost(infra.nc, infra.topology.prefix, { logger: infra.logger });
  }

  async onModuleInit(): Promise<void> {
    await this.host.start();
  }

  onModuleDestroy(): void {
    this.host.stop();
  }
}

/** A plugin's name from the path (`author/name`, the slash sent as %2F). */
function pluginName(raw: string): string {
  const parsed = PluginName.safeParse(raw);
  if (!parsed.success) throw AdminApiError.invalid('path.name', 'a plugin name is author/name');
  return parsed.data;
}

@Controller('api/v1/plugins')
export class PluginsController {
  private readonly settings: PluginSettings;
  private readonly stats: PluginCallStats;

  constructor(@Inject(INFRA) private readonly infra: Infra, private readonly directory: PluginDirectory) {
    this.stats = new PluginCallStats(infra.redis, infra.topology.prefix);
    this.settings = new PluginSettings(infra.prisma, new PluginSettingsStore(infra.prisma), {
      schemaOf: (name) => {
        const live = directory.host.registrations().find((r) => r.registration.name === name);
        return live ? live.registration.settings : null;
      },
      announce: async (name, pipelineId) => {
        try {
          infra.nc.publish(infra.topology.subjects.plugins.settingsChanged(name), JSON.stringify(PluginSettingsChanged.parse({ v: 1, pipelineId })));
          await infra.nc.flush();
        } catch (err) {
          // Stored all the same: the plugin reads its settings at its next start.
          infra.logger.warn({ plugin: name, err: (err as Error).message }, 'plugin settings change not announced');
        }
      },
    });
  }

  @Get()
  async list(): Promise<AdminApi.PluginList> {
    return pluginList(this.infra.prisma, this.directory.host.registrations(), await this.stats.summary(60));
  }

  @Get(':name/settings')
  getSettings(@Param('name') name: string): Promise<AdminApi.PluginSettings> {
    return this.settings.get(pluginName(name));
  }

  @Put(':name/settings')
  putSettings(@Caller() caller: Principal, @Param('name') name: string, @Body() body: unknown): Promise<AdminApi.PluginSettings> {
    return this.settings.put(caller, pluginName(name), parse(AdminApi.PluginSettingsUpdate, body, 'body'));
  }
}

@Controller('api/v1/bots')
export class BotEndpointController {
  constructor(@Inject(INFRA) private readonly infra: Infra, @Inject(ADMIN_SETTINGS) private readonly settings: AdminSettings) {}

  @Get(':id/endpoint')
  endpoint(@Param('id', StorableId) id: string): Promise<AdminApi.BotEndpoint> {
    return botEndpoint(this.infra.prisma, id, {
      ingressPublicUrl: this.settings.ingressPublicUrl,
      lease: (botId) => readConnectionLease(this.infra.redis, this.infra.topology.prefix, botId),
    });
  }
}
