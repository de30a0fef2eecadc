import { Readable } from 'node:stream';
import { Controller, Get, Inject, Param, Query, StreamableFile } from '@nestjs/common';
import { AdminApi } from '@conveyor/contracts';
import { monitoringErrors, monitoringSessions, monitoringSummary, queryLogCsv, queryTimeline, resolveRange, sessionConversations, type ConfigStore } from '@conveyor/admin';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { parse, StorableId } from './http.js';
import { CONFIG_STORE } from './tokens.js';

/** Monitoring computed on the server: the dashboard's aggregates, the error log, sessions, the CSV export, a query's timeline. */
@Controller('api/v1')
export class MonitoringController {
  constructor(@Inject(INFRA) private readonly infra: Infra, @Inject(CONFIG_STORE) private readonly store: ConfigStore) {}

  @Get('monitoring/summary')
  summary(@Query() query: unknown) {
    return monitoringSummary(this.infra.db.pool, parse(AdminApi.MonitoringRange, query, 'query'));
  }

  @Get('monitoring/errors')
  errors(@Query() query: unknown) {
    return monitoringErrors(this.infra.prisma, parse(AdminApi.MonitoringErrorFilter, query, 'query'));
  }

  @Get('monitoring/sessions')
  sessions(@Query() query: unknown) {
    return monitoringSessions(this.infra.db.pool, parse(AdminApi.MonitoringSessionFilter, query, 'query'));
  }

  @Get('monitoring/sessions/conversations')
  async conversations(@Query() query: unknown) {
    const chat = parse(AdminApi.SessionConversationsFilter, query, 'query');
    const settings = await this.store.getSettings();
    return sessionConversations(this.infra.prisma, chat, settings.monitoring.showMessageText === true);
  }

  @Get('monitoring/queries.csv')
  csv(@Query() query: unknown) {
    const range = parse(AdminApi.MonitoringRange, query, 'query');
    // A bad range is a 400 before the file starts, not a cut-off download.
    resolveRange(range);
    return new StreamableFile(Readable.from(queryLogCsv(this.infra.db.pool, range)), {
      type: 'text/csv; charset=utf-8',
      disposition: `attachment; filename="queries-${range.range}.csv"`,
    });
  }

  @Get('queries/:id/timeline')
  timeline(@Param('id', StorableId) id: string) {
    return queryTimeline(this.infra.prisma, id);
  }
}
