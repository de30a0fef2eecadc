import { z } from 'zod';
import { parseSecretKey, SecretBoxError } from '@conveyor/persistence';

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
  /** Mark the session cookie Secure (HTTPS only). Default: when ADMIN_PUBLIC_URL is https. */
  ADMIN_COOKIE_SECURE: z.preprocess(unsetWhenEmpty, z.stringbool().optional()),
  /** Largest request body, in bytes (a pipeline config is the biggest). */
  ADMIN_BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).max(16 * 1024 * 1024).default(1024 * 1024),
});
export type AdminEnv = z.infer<typeof AdminEnv>;
