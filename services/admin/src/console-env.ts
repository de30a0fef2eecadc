import { z } from 'zod';
import { MIN_BEARER_TOKEN_CHARS } from '@conveyor/service-kit';

const unsetWhenEmpty = (value: unknown) => (value === '' ? undefined : value);

/** The web console's settings: trace links, and the ingress web chat its debug chat relays to. */
export const ConsoleEnv = z.object({
  /** The console's trace link; `{traceId}` is replaced (Jaeger's UI by default, as docker-compose runs it). */
  CONSOLE_TRACE_URL_TEMPLATE: z.preprocess(unsetWhenEmpty, z.string().includes('{traceId}', { message: 'CONSOLE_TRACE_URL_TEMPLATE must contain {traceId}' }).default('http://localhost:16686/trace/{traceId}')),
  /** The ingress the debug chat talks to (its web chat, WEBCHAT_ENABLED there). Unset: no debug chat. */
  ADMIN_INGRESS_URL: z.preprocess(unsetWhenEmpty, z.url({ protocol: /^https?$/ }).optional()),
  /** The ingress's WEBCHAT_TOKEN; the admin service sends it, so the browser never holds it. */
  WEBCHAT_TOKEN: z.preprocess(unsetWhenEmpty, z.string().min(MIN_BEARER_TOKEN_CHARS, `WEBCHAT_TOKEN needs at least ${MIN_BEARER_TOKEN_CHARS} characters`).optional()),
});
export type ConsoleEnv = z.infer<typeof ConsoleEnv>;
