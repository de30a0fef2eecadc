import { Controller, Delete, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { context, propagation } from '@opentelemetry/api';
import { headers } from '@nats-io/transport-node';
import { AdminApi } from '@conveyor/contracts';
import { getQuery, listAudit, listQueries, recordAudit, type DeadLetters, type Principal } from '@conveyor/admin';
import { natsHeaderSetter } from '@conveyor/bus';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { inSpan } from '@conveyor/telemetry';
import { Caller, parse, StorableId, RequireRole, seqParam } from './http.js';
import { DEAD_LETTERS } from './tokens.js';

@Controller('api/v1')
export class RecordsController {
  constructor(@Inject(INFRA) private readonly infra: Infra, @Inject(DEAD_LETTERS) private readonly deadLetters: DeadLetters) {}

  @Get('queries')
  queries(@Query() query: unknown) {
    return listQueries(this.infra.prisma, parse(AdminApi.QueryLogFilter, query, 'query'));
  }

  @Get('queries/:id')
  query(@Param('id', StorableId) id: string) {
    return getQuery(this.infra.prisma, id);
  }

  @Get('dead-letters')
  deadLetterList(@Query() query: unknown) {
    return this.deadLetters.list(parse(AdminApi.DeadLetterFilter, query, 'query'));
  }

  @Get('dead-letters/:seq')
  deadLetter(@Param('seq') seq: string) {
    return this.deadLetters.get(seqParam(seq));
  }

  @Post('dead-letters/:seq/resubmit')
  @HttpCode(200)
  async resubmit(@Caller() caller: Principal, @Param('seq') seq: string): Promise<AdminApi.DeadLetterResubmitted> {
    const n = seqParam(seq);
    const result = await inSpan('admin dead letter resubmit', { 'conveyor.dead_letter.seq': n }, async () => {
      // The resubmitted message starts a trace of its own under this request's span.
      const h = headers();
      propagation.inject(context.active(), h, natsHeaderSetter);
      return this.deadLetters.resubmit(n, h);
    });
    await this.infra.prisma.$transaction((tx) => recordAudit(tx, { actor: caller.actor, resource: 'dead-letter', resourceId: String(n), action: 'resubmit', changes: [result.subject] }));
    return result;
  }

  @Delete('dead-letters/:seq')
  @HttpCode(204)
  async discard(@Caller() caller: Principal, @Param('seq') seq: string): Promise<void> {
    const n = seqParam(seq);
    await this.deadLetters.discard(n);
    await this.infra.prisma.$transaction((tx) => recordAudit(tx, { actor: caller.actor, resource: 'dead-letter', resourceId: String(n), action: 'discard' }));
  }

  @Get('audit')
  @RequireRole('admin')
  audit(@Query() query: unknown) {
    return listAudit(this.infra.prisma, parse(AdminApi.AuditFilter, query, 'query'));
  }
}
