import 'reflect-metadata';
import { Module, type DynamicModule, type INestApplication, type NestApplicationOptions } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { MicroserviceOptions } from '@nestjs/microservices';
import { TerminusModule } from '@nestjs/terminus';
import type { z } from 'zod';
import { createLogger, type Logger } from '@conveyor/telemetry';
import { shutdownTelemetry } from '@conveyor/telemetry/sdk';
import { awaitStreams } from '@conveyor/bus';
import { loadServiceEnv, type ServiceEnv } from './env.js';
import { closeInfra, connectInfra, type Infra, type InfraOptions } from './infra.js';
import { InfraModule } from './infra.module.js';
import { HealthController } from './health.controller.js';
import { lifecycle } from './lifecycle.js';
import { NestLogger, requestLogging } from './request-logging.js';
import { strictExpressAdapter } from './open-route.js';
import { JetStreamTransport, type RoleConsumers } from './jetstream-transport.js';
import { serveBeforeFramework, type RawRoutes } from './raw-routes.js';

export interface ServiceDefinition<S extends z.ZodObject> {
  /** Role name: log field, NATS connection name, default OTEL service name. */
  name: string;
  defaultPort: number;
  /** The role's own settings, beside every service's (`BaseEnv`); `infra.env` holds both. */
  env: S;
  /**
   * Postgres connections one process of this role opens at most unless DATABASE_POOL_SIZE says
   * otherwise; default 20. Roles that read a few cached rows need far fewer: every connection of
   * every replica counts against the server's (or the pooler's) limit.
   */
  databasePoolSize?: number;
  /** The role's bounds on its configuration cache, from its settings. */
  readModel?: (env: ServiceEnv<S>) => InfraOptions['readModel'];
  /** The service's own module, built once the connections exist. */
  module: (infra: Infra<ServiceEnv<S>>) => DynamicModule;
  /**
   * The role's JetStream consumers: each one's handler is the `@EventPattern(role)` method of one of
   * the module's controllers. They start after the HTTP server listens and drain first on SIGTERM.
   */
  consumers?: (infra: Infra<ServiceEnv<S>>) => RoleConsumers;
  /** Called after the HTTP server listens (and the consumers started): start other work here. Returns a stop function for shutdown. */
  start?: (app: INestApplication, infra: Infra<ServiceEnv<S>>) => Promise<() => Promise<void>>;
  /** Called before the HTTP server listens: routes added here (API docs) come before the not-found handler. */
  configure?: (app: INestApplication, infra: Infra<ServiceEnv<S>>) => void | Promise<void>;
  nestOptions?: NestApplicationOptions;
  /**
   * Routes served ahead of Express and Nest (see `serveBeforeFramework`): a hot path that needs none of
   * the framework's routing, guards or handler chain. Built once the module's providers exist.
   */
  rawRoutes?: (app: INestApplication, infra: Infra<ServiceEnv<S>>) => RawRoutes;
}

@Module({})
class ServiceRootModule {}

@Module({})
class OperationsRootModule {}

/**
 * One entry point per role: validate env, connect NATS/Redis/Postgres (failing fast with the URL and
 * how to start it), provision streams, serve health and metrics, run the role, drain on SIGTERM.
 */
export async function runService<S extends z.ZodObject>(def: ServiceDefinition<S>): Promise<void> {
  const logger = createLogger(def.name);
  let infra: Infra<ServiceEnv<S>> | undefined;
  try {
    const env = loadServiceEnv(def.env);
    infra = await connectInfra(def.name, env, logger, { databasePoolSize: def.databasePoolSize, readModel: def.readModel?.(env) });
    await awaitStreams(infra.jsm, Object.values(infra.topology.streams), { replicas: env.NATS_STREAM_REPLICAS, logger, timeoutMs: env.NATS_STREAMS_WAIT_SECONDS * 1000 });
    const app = await NestFactory.create(
      {
        module: ServiceRootModule,
        imports: [
          InfraModule.forRoot(infra),
          TerminusModule,
          def.module(infra),
        ],
        controllers: env.METRICS_PORT === undefined ? [HealthController] : [],
      },
      strictExpressAdapter(),
      { bufferLogs: true, ...def.nestOptions },
    );
    app.useLogger(new NestLogger(logger));
    const transport = def.consumers ? new JetStreamTransport(infra, def.consumers(infra)) : undefined;
    if (transport) app.connectMicroservice<MicroserviceOptions>({ strategy: transport });
    app.use(requestLogging(logger));
    if (def.rawRoutes) serveBeforeFramework(app.getHttpServer(), def.rawRoutes(app, infra), requestLogging(logger), (err) => logger.error({ err }, 'request failed'));
    await def.configure?.(app, infra);
    const port = env.PORT ?? def.defaultPort;
    await app.listen(port, env.HOST);
    const operations = env.METRICS_PORT === undefined ? undefined : await serveOperations(infra, env.METRICS_PORT, env.HOST);
    if (transport) await app.startAllMicroservices();
    const stop = def.start ? await def.start(app, infra) : async () => undefined;
    lifecycle.started = true;
    logger.info({ port, metricsPort: env.METRICS_PORT ?? port, prefix: env.CONVEYOR_SUBJECT_PREFIX }, `${def.name} ready`);
    installShutdown(def.name, logger, env.SHUTDOWN_GRACE_SECONDS, async () => {
      await transport?.close();
      await stop();
      await app.close();
      // Last, so readiness keeps answering 503 (draining) while the service port winds down.
      await operations?.close();
      await closeInfra(infra!);
    });
  } catch (err) {
    logger.fatal({ err }, `${def.name} failed to start: ${(err as Error).message}`);
    if (infra) await closeInfra(infra).catch(() => undefined);
    await shutdownTelemetry();
    process.exit(1);
  }
}

/** Health and metrics on a port of their own, without request logging (probes and scrapes are not traffic). */
async function serveOperations(infra: Infra, port: number, host: string): Promise<INestApplication> {
  const app = await NestFactory.create(
    { module: OperationsRootModule, imports: [InfraModule.forRoot(infra), TerminusModule], controllers: [HealthController] },
    strictExpressAdapter(),
    { logger: ['error', 'warn'] },
  );
  await app.listen(port, host);
  return app;
}

function installShutdown(name: string, logger: Logger, graceSeconds: number, close: () => Promise<void>): void {
  let stopping = false;
  const onSignal = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    lifecycle.draining = true;
    logger.info({ signal }, `${name} draining`);
    // Past the grace period the broker redelivers whatever is unfinished; exiting is safe.
    const hardStop = setTimeout(() => {
      logger.warn(`${name} did not drain within ${graceSeconds}s; exiting`);
      process.exit(1);
    }, graceSeconds * 1000);
    hardStop.unref();
    try {
      await close();
      logger.info(`${name} stopped`);
    } catch (err) {
      logger.error({ err }, `${name} shutdown error`);
    }
    await shutdownTelemetry();
    process.exit(0);
  };
  process.once('SIGTERM', () => void onSignal('SIGTERM'));
  process.once('SIGINT', () => void onSignal('SIGINT'));
}
