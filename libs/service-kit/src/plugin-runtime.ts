import { Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { PluginHost } from '@conveyor/bus';
import { PluginCallStats } from '@conveyor/message-state';
import type { PluginPort } from '@conveyor/pipeline';
import { INFRA } from './infra.module.js';
import type { Infra } from './infra.js';

/**
 * The plugin registry and caller of a service that calls plugins (the orchestrator and the dispatcher
 * for events and commands, the runner for tools): heartbeats are followed from module start, and
 * `port` is what the stages call.
 */
@Injectable()
export class PluginRuntime implements OnModuleInit, OnModuleDestroy {
  readonly host: PluginHost;
  readonly port: PluginPort;
  /** Every call's outcome, added up in Redis every few seconds for the console's plugin list. */
  private readonly stats: PluginCallStats;
  private readonly logger: Infra['logger'];

  constructor(@Inject(INFRA) infra: Infra) {
    this.stats = new PluginCallStats(infra.redis, infra.topology.prefix);
    this.logger = infra.logger;
    this.host = new PluginHost(infra.nc, infra.topology.prefix, { logger: infra.logger, onCall: (c) => this.stats.record({ plugin: c.plugin, ok: c.result === 'ok', ms: c.ms }) });
    this.port = {
      emit: (q, event) => this.host.emit({ queryId: q.queryId, botId: q.route.botId, pipelineId: q.pipelineId, event }, q.plugins ?? 'all'),
      listens: (q, event) => this.host.forEvent(event, q.plugins ?? 'all').length > 0,
      commands: (q) => this.host.commandsFor(q.plugins ?? 'all').map((c) => c.command),
      runCommand: async (q, command, call) => {
        const offered = this.host.commandsFor(q.plugins ?? 'all').find((c) => c.command.name === command);
        if (!offered) throw new Error(`no plugin offers ${command} now`);
        const { route } = q;
        const result = await this.host.callCommand(offered.plugin, {
          queryId: q.queryId, botId: route.botId, pipelineId: q.pipelineId, command, ...call,
          launcher_type: route.launcherType, launcher_id: route.launcherId, sender_id: route.senderId,
        });
        return result.text;
      },
    };
  }

  async onModuleInit(): Promise<void> {
    await this.host.start();
    this.stats.start(5_000, (err) => this.logger.warn({ err: (err as Error).message }, 'plugin call statistics not written; those counts are dropped'));
  }

  async onModuleDestroy(): Promise<void> {
    this.host.stop();
    await this.stats.stop();
  }
}
