import { Controller } from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import { RoleHandler } from '@conveyor/service-kit';
import type { ConsumeContext } from '@conveyor/bus';
import type { QueryEnvelope } from '@conveyor/contracts';
import { QueryHandler } from './query.handler.js';

/** The orchestrator's durable consumer (settings in main.ts): every accepted message, once per query. */
@Controller()
export class QueryConsumer {
  constructor(private readonly handler: QueryHandler) {}

  @RoleHandler('orchestrator')
  handle(@Payload() query: QueryEnvelope, @Ctx() ctx: ConsumeContext): Promise<void> {
    return this.handler.handle(query, ctx);
  }
}
