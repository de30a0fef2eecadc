import { Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { HumanRequests, TakeoverDirectory } from '@conveyor/config-read-model';
import { INFRA, type Infra } from '@conveyor/service-kit';

/**
 * The chats operators answer instead of the bot, as this orchestrator replica keeps them
 * (TakeoverDirectory), and where a chat's keyword asks for one (HumanRequests).
 */
@Injectable()
export class Takeovers implements OnModuleInit, OnModuleDestroy {
  readonly directory: TakeoverDirectory;
  readonly humanRequests: HumanRequests;

  constructor(@Inject(INFRA) infra: Infra) {
    this.directory = new TakeoverDirectory(infra.prisma, infra.nc, infra.topology.prefix, infra.logger);
    this.humanRequests = new HumanRequests(infra.prisma, infra.nc, infra.topology.prefix, infra.logger);
  }

  async onModuleInit(): Promise<void> {
    await this.directory.start();
  }

  onModuleDestroy(): void {
    this.directory.stop();
  }
}
