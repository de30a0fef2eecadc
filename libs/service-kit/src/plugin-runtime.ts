import { Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { PluginHost } from '@conveyor/bus';
import type { PluginPort } from '@conveyor/pipeline';
import { INFRA } from './infra.module.js';
import type { Infra } from './infra.js';

/**
 * The plugin registry and caller of a service that emits plugin events (the orchestrator, the
 * dispatcher): heartbeats are followed from module start, and `port` is what the stages call.
 */
@Injectable()
export class PluginRuntime implements OnModuleInit, OnModuleDestroy {
  readonly host: PluginHost;
  readonly port: PluginPort;

  constructor(@Inject(INFRA) infra: Infra) {
    this.host = new PluginHost(infra.nc, infra.topology.prefix, { logger: infra.logger });
    this.port = {
      emit: (q, event) => this.host.emit({ queryId: q.queryId, botId: q.route.botId, pipelineId: q.pipelineId, event }, q.plugins ?? 'all'),
      listens: (q, event) => this.host.forEvent(event, q.plugins ?? 'all').length > 0,
    };
  }

  async onModuleInit(): Promise<void> {
    await this.host.start();
  }

  onModuleDestroy(): void {
    this.host.stop();
  }
}
