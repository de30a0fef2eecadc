import { z } from 'zod';
import { parseSecretKey, SecretBoxError } from '@conveyor/persistence';
import { DEFAULT_THROTTLE } from '@conveyor/admin';
import { topology } from '@conveyor/contracts';

/** The dead-letter stream's own age limit: pruning can keep them shorter, never longer. */
const DEAD_LETTER_STREAM_DAYS = topology().streams.deadLetters.maxAgeMs / 86_400_000;
const days = (fallback: number, max = 36_500) => z.coerce.number().int().min(0).max(max).default(fallback);

/** An empty value counts as unset, as compose's `${NAME:-}` and an empty Secret key hand it over. */
const unsetWhenEmpty = (value: unknown) => (value === '' ? undefined : value);

const secretKey = (name: string) =>
  z.preprocess(unsetWhenEmpty, z.string().optional()).superRefine((value, ctx) => {
    for (const part of value?.split(',').map((s) => s.trim()).filter(Boolean) ?? []) {
      try {
        parseSecretKey(part, name);
      } catch (err) {
        if (!(err instanceof SecretBoxError)) throw err;
        // The message states the length only, never the value.
        ctx.addIssue({ code: 'custom', message: err.message });
      }
    }
  });

export const AdminEnv = z.object({
  /** The first admin user's name, created on first start when CONVEYOR_ADMIN_PASSWORD is set. */
  CONVEYOR_ADMIN_USER: z.preprocess(unsetWhenEmpty, z.string().regex(/^[A-Za-z0-9._@-]{1,100}$/).default('admin')),
  /** Unset: the first start logs a one-time setup link instead. Used only while no user exists. */
  CONVEYOR_ADMIN_PASSWORD: z.preprocess(unsetWhenEmpty, z.string().min(12, 'CONVEYOR_ADMIN_PASSWORD needs at least 12 characters').optional()),
  /** 32 bytes (base64 or hex): encrypts model API keys entered through the API. */
  CONVEYOR_SECRET_KEY: secretKey('CONVEYOR_SECRET_KEY'),
  /** Earlier keys, comma-separated: still decrypt; the admin service re-encrypts their values at start. */
  CONVEYOR_SECRET_KEY_PREVIOUS: secretKey('CONVEYOR_SECRET_KEY_PREVIOUS'),
  /** How long a console sign-in lasts. */
  ADMIN_SESSION_HOURS: z.coerce.number().min(0.01).max(24 * 30).default(12),
  /** Where operators reach the API and console, for the setup link and the start-up line; default http://localhost:<port>. */
  ADMIN_PUBLIC_URL: z.preprocess(unsetWhenEmpty, z.url().optional()),
  /**
   * Where the platforms reach the ingress from outside (e.g. https://bots.example.com): the console shows
   * each bot's webhook URL under it. Unset: the console shows the path only.
   */
  INGRESS_PUBLIC_URL: z.preprocess(unsetWhenEmpty, z.url({ protocol: /^https?$/ }).optional()),
  /**
   * Mark the session cookie Secure (HTTPS only). Default: when ADMIN_PUBLIC_URL is https, else when the
   * sign-in request came over HTTPS (directly, or through a proxy ADMIN_TRUST_PROXY names).
   */
  ADMIN_COOKIE_SECURE: z.preprocess(unsetWhenEmpty, z.stringbool().optional()),
  /** Largest request body, in bytes (a pipeline config is the biggest). */
  ADMIN_BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).max(16 * 1024 * 1024).default(1024 * 1024),
  /** Sign-in attempts not yet proven good per user name and client address, per window; past it, 429. */
  ADMIN_LOGIN_ATTEMPTS_PER_USER: z.coerce.number().int().min(1).max(10_000).default(DEFAULT_THROTTLE.perUser),
  /** Sign-in attempts per client address over every user name, per window. */
  ADMIN_LOGIN_ATTEMPTS_PER_ADDRESS: z.coerce.number().int().min(1).max(100_000).default(DEFAULT_THROTTLE.perAddress),
  /** Setup attempts per client address, per window (each costs a password hash). */
  ADMIN_SETUP_ATTEMPTS_PER_ADDRESS: z.coerce.number().int().min(1).max(10_000).default(DEFAULT_THROTTLE.setup),
  ADMIN_LOGIN_WINDOW_SECONDS: z.coerce.number().int().min(1).max(86_400).default(DEFAULT_THROTTLE.windowMs / 1000),
  /**
   * Which proxies in front of the service to believe about the client's address (Express's `trust
   * proxy`: a hop count, or comma-separated addresses and subnets such as `loopback, 10.0.0.0/8`).
   * Unset: the connection's own address, which behind a proxy is the proxy's: every client then
   * shares one address's sign-in limits.
   */
  /** Retention, in days (0: kept forever): query log records, by when they were received. */
  RETENTION_QUERY_DAYS: days(30),
  /**
   * The query log's hourly rollup (the dashboard's per-hour counts, tokens and cost), by its hour: kept
   * longer than the raw records by default, so the dashboard's ranges outlive them.
   */
  RETENTION_ROLLUP_DAYS: days(400),
  /** Conversations and their messages, by their last turn (a chat with a query in flight keeps its own). */
  RETENTION_CONVERSATION_DAYS: days(90),
  /** Audit log entries. */
  RETENTION_AUDIT_DAYS: days(365),
  /** Dead letters; 0 leaves them to the stream's own limits (its max age and size). */
  RETENTION_DEAD_LETTER_DAYS: z.coerce.number().int().min(0)
    .max(DEAD_LETTER_STREAM_DAYS, `RETENTION_DEAD_LETTER_DAYS can be at most ${DEAD_LETTER_STREAM_DAYS}: the dead-letter stream drops older entries itself (its max age)`)
    .default(DEAD_LETTER_STREAM_DAYS),
  /** Minutes between the end of one pruning run and the next. */
  RETENTION_INTERVAL_MINUTES: z.coerce.number().min(0.01).max(7 * 24 * 60).default(60),
  /** Rows one delete statement (one transaction) removes at most, and the pause between two. */
  RETENTION_BATCH_SIZE: z.coerce.number().int().min(1).max(100_000).default(1_000),
  RETENTION_BATCH_PAUSE_MS: z.coerce.number().int().min(0).max(60_000).default(200),
  ADMIN_TRUST_PROXY: z.preprocess(unsetWhenEmpty, z.string().regex(/^(\d{1,2}|[0-9A-Za-z.:/, ]{1,1000})$/, 'a hop count, or addresses and subnets separated by commas').optional()),
});
export type AdminEnv = z.infer<typeof AdminEnv>;
