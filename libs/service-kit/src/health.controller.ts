import { Controller, Get, Inject, Req, Res } from '@nestjs/common';
import { HealthCheck, HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { prometheusExporter } from '@conveyor/telemetry/sdk';
import { INFRA } from './infra.module.js';
import type { Infra } from './infra.js';
import { lifecycle } from './lifecycle.js';
import { OpenRoute } from './open-route.js';

const CHECK_TIMEOUT_MS = 2_000;

function withTimeout<T>(p: Promise<T>): Promise<T> {
  return Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error('timed out')), CHECK_TIMEOUT_MS).unref())]);
}

/** Probes and scrapers carry no credentials: open on every service, whatever guard it has. */
@OpenRoute()
@Controller()
export class HealthController {
  constructor(
    @Inject(INFRA) private readonly infra: Infra,
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
  ) {}

  /** Liveness: the process answers. Dependencies are not checked, so a broker outage does not restart pods. */
  @Get('health/live')
  live() {
    return { status: 'ok' };
  }

  /** Readiness: the service has started, is not draining, and every dependency answers. */
  @Get('health/ready')
  // Terminus documents the route through @nestjs/swagger when it is installed, and loading it costs
  // every service about 0.4 s at start; the probes are not part of any published API.
  @HealthCheck({ noCache: true, swaggerDocumentation: false })
  ready() {
    return this.health.check([
      () => this.probe('service', async () => {
        if (!lifecycle.started) throw new Error('starting');
        if (lifecycle.draining) throw new Error('draining');
      }),
      () => this.probe('nats', async () => { await withTimeout(this.infra.nc.flush()); }),
      () => this.probe('redis', async () => { await withTimeout(this.infra.redis.ping()); }),
      () => this.probe('postgres', async () => { await withTimeout(this.infra.prisma.$queryRaw`SELECT 1`); }),
    ]);
  }

  @Get('metrics')
  metrics(@Req() req: IncomingMessage, @Res() res: ServerResponse) {
    const exporter = prometheusExporter();
    if (!exporter) {
      res.statusCode = 503;
      res.end('telemetry not started\n');
      return;
    }
    exporter.getMetricsRequestHandler(req, res);
  }

  private async probe(key: string, check: () => Promise<void>) {
    const indicator = this.indicators.check(key);
    try {
      await check();
      return indicator.up();
    } catch (err) {
      return indicator.down({ message: (err as Error).message });
    }
  }
}
