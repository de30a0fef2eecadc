import { Inject, Injectable } from '@nestjs/common';
import type { BotEntry } from '@conveyor/config-read-model';
import { INFRA } from '@conveyor/service-kit';
import type { IngressInfra } from './env.js';

export type { BotEntry };

/** Bots by id from the process's configuration read model, so a webhook burst does not become a Postgres burst. */
@Injectable()
export class BotDirectory {
  constructor(@Inject(INFRA) private readonly infra: IngressInfra) {}

  find(botId: string): Promise<BotEntry | null> {
    return this.infra.config.bot(botId);
  }
}
