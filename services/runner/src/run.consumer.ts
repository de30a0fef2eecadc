import { Controller } from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import type { ConsumeContext } from '@conveyor/bus';
import type { RunRequest } from '@conveyor/contracts';
import { RoleHandler } from '@conveyor/service-kit';
import { RunHandler } from './run.handler.js';

/**
 * The runner's durable consumer (settings in main.ts), shared by all replicas. Prefetch 1 with
 * RUNNER_CONCURRENCY slots: a replica asks for a run only when it has a free slot, so the backlog goes
 * to idle replicas; a run restarted after its runner died links to the attempt that died.
 */
@Controller()
export class RunConsumer {
  constructor(private readonly handler: RunHandler) {}

  @RoleHandler('runner')
  handle(@Payload() run: RunRequest, @Ctx() ctx: ConsumeContext): Promise<void> {
    return this.handler.handle(run, ctx);
  }
}
