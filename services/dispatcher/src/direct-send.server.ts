import { Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Subscription } from '@nats-io/transport-node';
import { serveDirectSends } from '@conveyor/bus';
import { sendToChat } from '@conveyor/delivery';
import { INFRA } from '@conveyor/service-kit';
import { PlatformOutbound } from './platform.outbound.js';
import type { DispatcherInfra } from './env.js';

/**
 * Messages to chats that answer nothing (a plugin's `send_message`, an operator's reply), sent by this
 * replica straight to the platform. Wiring only: the behaviour is libs/delivery's `sendToChat`.
 */
@Injectable()
export class DirectSendServer implements OnModuleInit, OnModuleDestroy {
  private subscription: Subscription | undefined;

  constructor(@Inject(INFRA) private readonly infra: DispatcherInfra, private readonly outbound: PlatformOutbound) {}

  async onModuleInit(): Promise<void> {
    const { infra } = this;
    this.subscription = await serveDirectSends(infra.nc, infra.topology.prefix, (request) => sendToChat(request, {
      bot: (id) => infra.config.bot(id),
      send: (route, reply) => this.outbound.send(route, reply),
    }), infra.logger);
  }

  onModuleDestroy(): void {
    this.subscription?.unsubscribe();
  }
}
