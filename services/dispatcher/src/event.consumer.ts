import { Controller } from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import { RoleHandler } from '@conveyor/service-kit';
import type { ConsumeContext } from '@conveyor/bus';
import type { RunnerEvent } from '@conveyor/contracts';
import { EventHandler } from './event.handler.js';

/** The dispatcher's durable consumer (settings in main.ts): every run event, in each reply's order. */
@Controller()
export class EventConsumer {
  constructor(private readonly handler: EventHandler) {}

  @RoleHandler('dispatcher')
  handle(@Payload() event: RunnerEvent, @Ctx() ctx: ConsumeContext): Promise<void> {
    return this.handler.handle(event, ctx);
  }
}
