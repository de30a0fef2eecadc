import express from 'express';
import { AuthStore, DEFAULT_ROLLUP_SCHEDULE, DeadLetters, startRetention, startRollupFolding } from '@conveyor/admin';
import { SecretBox } from '@conveyor/persistence';
import { runService } from '@conveyor/service-kit';
import { AdminModule, configStore, type AdminParts } from './admin.module.js';
import { AdminEnv } from './env.js';
import { serveOpenApi } from './openapi.js';
import { ConsoleEnv } from './console-env.js';
import { serveConsole } from './console.js';
import { answerClientError } from './http.js';

const DEFAULT_PORT = 8084;
/** Expired sessions are deleted this often. */
const SESSION_SWEEP_MS = 60 * 60_000;
/** A starting replica serves first and prunes a little later. */
const RETENTION_FIRST_RUN_MS = 60_000;
/** One run deletes at most this many batches per kind; a backlog (a first run on a full table) takes several runs. */
const RETENTION_MAX_BATCHES = 1_000;

let parts: AdminParts | undefined;

await runService({
  name: 'admin',
  defaultPort: DEFAULT_PORT,
  env: AdminEnv.extend(ConsoleEnv.shape),
  module: (infra) => {
    const env = infra.env;
    const publicUrl = (env.ADMIN_PUBLIC_URL ?? `http://localhost:${env.PORT ?? DEFAULT_PORT}`).replace(/\/+$/, '');
    parts = {
      auth: new AuthStore(infra.prisma, { sessionTtlMs: env.ADMIN_SESSION_HOURS * 3_600_000 }),
      box: SecretBox.fromEnv({ CONVEYOR_SECRET_KEY: env.CONVEYOR_SECRET_KEY, CONVEYOR_SECRET_KEY_PREVIOUS: env.CONVEYOR_SECRET_KEY_PREVIOUS }),
      settings: { publicUrl, ingressPublicUrl: env.INGRESS_PUBLIC_URL?.replace(/\/+$/, ''), cookieSecure: env.ADMIN_COOKIE_SECURE ?? (publicUrl.startsWith('https:') ? true : 'request') },
    };
    return AdminModule.register(infra, parts);
  },
  // The API parses its own JSON with a size limit of its own (a pipeline config is the largest body).
  nestOptions: { bodyParser: false },
  // Before the port opens, so the first sign-in finds the first user.
  configure: async (app, infra) => {
    // The client address the sign-in limits count by: the connection's, unless proxies are named.
    const trust = infra.env.ADMIN_TRUST_PROXY?.trim();
    if (trust) (app.getHttpAdapter().getInstance() as express.Express).set('trust proxy', /^\d+$/.test(trust) ? Number(trust) : trust.split(',').map((s) => s.trim()).filter(Boolean));
    app.getHttpServer().on('clientError', answerClientError);
    app.use('/api', express.json({ limit: infra.env.ADMIN_BODY_LIMIT_BYTES }));
    serveOpenApi(app);
    serveConsole(app, infra);
    const { auth, box, settings } = parts!;
    const env = infra.env;
    const first = await auth.bootstrap({ username: env.CONVEYOR_ADMIN_USER, password: env.CONVEYOR_ADMIN_PASSWORD });
    if (first.createdUser) infra.logger.info({ username: first.createdUser }, `admin user ${first.createdUser} created from CONVEYOR_ADMIN_PASSWORD`);
    // Only the replica that created the token prints it, once; the password is never printed.
    if (first.setupToken) {
      infra.logger.warn(`no admin user yet: finish setup at ${settings.publicUrl}/setup#token=${first.setupToken} (one-time link; or set CONVEYOR_ADMIN_PASSWORD and restart)`);
    }
    if (!box.canEncrypt) infra.logger.warn('CONVEYOR_SECRET_KEY is not set: model API keys can be given as apiKeyEnv references only');
    const rotated = await configStore(infra, box).reencryptModelKeys();
    if (rotated.length) infra.logger.info({ models: rotated }, 'model API keys re-encrypted with the current CONVEYOR_SECRET_KEY');
  },
  start: async (_app, infra) => {
    const { auth, settings } = parts!;
    const sweep = setInterval(() => void auth.sweepExpiredSessions().catch((err: unknown) => infra.logger.warn({ err }, 'expired sessions not swept')), SESSION_SWEEP_MS);
    sweep.unref();
    const env = infra.env;
    const retention = startRetention(
      infra.db.pool,
      new DeadLetters(infra.js, infra.jsm, infra.topology.streams.deadLetters),
      {
        policy: { queryDays: env.RETENTION_QUERY_DAYS, rollupDays: env.RETENTION_ROLLUP_DAYS, conversationDays: env.RETENTION_CONVERSATION_DAYS, auditDays: env.RETENTION_AUDIT_DAYS, deadLetterDays: env.RETENTION_DEAD_LETTER_DAYS },
        intervalMs: env.RETENTION_INTERVAL_MINUTES * 60_000,
        firstRunDelayMs: Math.min(RETENTION_FIRST_RUN_MS, env.RETENTION_INTERVAL_MINUTES * 60_000),
        batchSize: env.RETENTION_BATCH_SIZE,
        pauseMs: env.RETENTION_BATCH_PAUSE_MS,
        maxBatchesPerKind: RETENTION_MAX_BATCHES,
      },
      infra.logger,
    );
    const rollup = startRollupFolding(infra.db.pool, DEFAULT_ROLLUP_SCHEDULE, infra.logger);
    infra.logger.info({ api: `${settings.publicUrl}/api/v1`, docs: `${settings.publicUrl}/api/docs` }, `admin API at ${settings.publicUrl}/api/v1 (OpenAPI at ${settings.publicUrl}/api/docs)`);
    return async () => {
      clearInterval(sweep);
      await retention.stop();
      await rollup.stop();
    };
  },
});
