import { Controller, Get, Inject, Injectable, Param, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { AdminApi } from '@conveyor/contracts';
import { botEndpoint, pluginList } from '@conveyor/admin';
import { PluginHost } from '@conveyor/bus';
import { readConnectionLease } from '@conveyor/gateway';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { StorableId } from './http.js';
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

@Controller('api/v1/plugins')
export class PluginsController {
  constructor(@Inject(INFRA) private readonly infra: Infra, private readonly directory: PluginDirectory) {}

  @Get()
  list(): Promise<AdminApi.PluginList> {
    return pluginList(this.infra.prisma, this.directory.host.registrations());
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
