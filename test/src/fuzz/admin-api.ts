import fc from 'fast-check';
import { AdminApi } from '@conveyor/contracts';
import type { FuzzSystem } from './fuzz-system.js';
import { deadService } from './fuzz-system.js';
import { anyTypedValue, hostileText, smallJson } from './arbitraries.js';
import { emptyReport, preview, type CategoryReport } from './report.js';
import { AdminClient, startAdmin } from '../admin/admin-support.js';
import { rawRequest } from '../security/admin-http.js';

/**
 * Routes the fuzz leaves alone: signing out ends the session every other input uses, and a change to
 * the `admin` user itself would lock the fuzz out (not a failure, but the rest would test nothing).
 */
const SKIPPED = new Set(['POST /auth/logout']);

/** How a request spells its route: as registered, or as a client that gets it slightly wrong. */
const spellings = ['as-is', 'as-is', 'as-is', 'as-is', 'upper', 'double-slash', 'trailing-slash', 'encoded', 'dot-segment'] as const;

export interface AdminApiInput {
  method: string;
  route: string;
  params: string[];
  spelling: (typeof spellings)[number];
  body: { kind: 'json'; value: unknown } | { kind: 'raw'; text: string } | { kind: 'none' };
  contentType: string | undefined;
  auth: 'session' | 'none' | 'garbage-bearer' | 'garbage-cookie';
  query: string;
}

const routes = AdminApi.ADMIN_ROUTES.filter(([m, p]) => !SKIPPED.has(`${m} ${p}`));

export const adminApiInput: fc.Arbitrary<AdminApiInput> = fc.record({
  routeIndex: fc.nat({ max: routes.length - 1 }),
  otherMethod: fc.oneof({ weight: 9, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom('PUT', 'DELETE', 'PATCH', 'POST', 'GET', 'OPTIONS', 'HEAD') }),
  params: fc.array(fc.oneof({ weight: 2, arbitrary: fc.constantFrom('default', 'fake', '5f0c2b7e-3d4a-4e8b-9a61-0c2f7d9e1b34', 'nope') }, { weight: 3, arbitrary: hostileText(24) }), { minLength: 3, maxLength: 3 }),
  spelling: fc.constantFrom(...spellings),
  body: fc.oneof(
    { weight: 5, arbitrary: fc.record({ kind: fc.constant('json' as const), value: fc.oneof(smallJson, fc.dictionary(hostileText(12), anyTypedValue, { maxKeys: 6 })) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('raw' as const), text: fc.oneof(fc.constantFrom('', '{', 'null', '[]', '{"a":', '\u0000', '{"__proto__":{"x":1}}'), hostileText(60)) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('raw' as const), text: fc.integer({ min: 1_100_000, max: 1_300_000 }).map((n) => `{"name":"${'n'.repeat(n)}"}`) }) },
    { weight: 2, arbitrary: fc.constant({ kind: 'none' as const }) },
  ),
  contentType: fc.constantFrom('application/json', 'application/json', 'application/json', 'text/plain', 'application/json; charset=utf-16', 'application/x-www-form-urlencoded', undefined),
  auth: fc.constantFrom('session', 'session', 'session', 'session', 'none', 'garbage-bearer', 'garbage-cookie'),
  query: fc.oneof({ weight: 4, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.dictionary(fc.constantFrom('limit', 'cursor', 'since', 'botId', 'status', 'q', 'x'), hostileText(20), { maxKeys: 3 }).map((q) => `?${new URLSearchParams(q).toString()}`) }),
}).map(({ routeIndex, otherMethod, ...rest }) => {
  const [method, route] = routes[routeIndex]!;
  return { method: otherMethod ?? method, route, ...rest };
});

/** Every byte but unreserved ASCII as %XX, lone surrogates included (as U+FFFD, the way a client's UTF-8 encoder sends them). */
function percentEncode(text: string): string {
  return [...Buffer.from(text, 'utf8')].map((b) => (/[A-Za-z0-9\-._~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('');
}

/** The request path for an input: parameters filled (percent-encoded), then spelled as the input says. */
export function adminApiPath(input: AdminApiInput): string {
  let n = 0;
  const filled = input.route.replace(/:[a-zA-Z]+/g, () => percentEncode(input.params[n++ % input.params.length] ?? 'x'));
  let full = `${AdminApi.ADMIN_API_BASE}${filled}`;
  switch (input.spelling) {
    case 'upper':
      full = full.toUpperCase();
      break;
    case 'double-slash':
      full = full.replace('/v1/', '/v1//');
      break;
    case 'trailing-slash':
      full += '/';
      break;
    case 'encoded':
      full = full.replace(/[a-z]$/, (c) => `%${c.charCodeAt(0).toString(16)}`);
      break;
    case 'dot-segment':
      full = full.replace('/v1/', '/v1/./');
      break;
    default:
      break;
  }
  return full + input.query;
}

/**
 * The admin API under random routes, parameters, spellings, bodies, content types and credentials,
 * against the real admin service: no 5xx, and every refusal is an AdminError naming the field it
 * refused (a body part, a header, the path).
 */
export async function fuzzAdminApi(fuzz: FuzzSystem, inputs: AdminApiInput[]): Promise<CategoryReport> {
  const report = emptyReport('admin-api');
  // Runs until the test system stops, like the other services (a stopped one counts as dead).
  // The debug chat relays the system's own web chat.
  const ingress = fuzz.sys.services.services.find((s) => s.name === 'ingress')!;
  const admin = await startAdmin(fuzz.sys, { ADMIN_LOGIN_ATTEMPTS_PER_ADDRESS: '10000', ADMIN_LOGIN_ATTEMPTS_PER_USER: '10000', ADMIN_INGRESS_URL: ingress.url, WEBCHAT_TOKEN: fuzz.webChatToken });
  {
    const client = new AdminClient(admin.url);
    const signedIn = await client.login();
    const cookie = String([signedIn.headers.get('set-cookie')].flat()[0] ?? '').split(';')[0]!;
    for (const input of inputs) {
      report.inputs++;
      const headers: Record<string, string> = {};
      if (input.contentType) headers['content-type'] = input.contentType;
      if (input.auth === 'session') headers.cookie = cookie;
      if (input.auth === 'garbage-bearer') headers.authorization = `Bearer cvt_${input.params[0]?.replace(/[^\x21-\x7e]/g, '') ?? ''}`;
      if (input.auth === 'garbage-cookie') headers.cookie = `${AdminApi.ADMIN_SESSION_COOKIE}=${percentEncode(input.params[1] ?? '')}`;
      const body = input.body.kind === 'json' ? JSON.stringify(input.body.value) : input.body.kind === 'raw' ? input.body.text : undefined;
      const path = adminApiPath(input);
      let answer: Awaited<ReturnType<typeof rawRequest>>;
      try {
        answer = await rawRequest(admin.url, input.method, path, { headers, ...(body !== undefined && input.method !== 'GET' && input.method !== 'HEAD' ? { body } : {}) });
      } catch (err) {
        report.failures.push({ problem: `no answer: ${(err as Error).message}`, input: preview({ ...input, path }) });
        continue;
      }
      if (answer.status >= 500) {
        report.failures.push({ problem: `${answer.status} answer: ${answer.text.slice(0, 200)}`, input: preview({ ...input, path }) });
      } else if (answer.status >= 400) {
        report.status4xx++;
        let field: unknown;
        try {
          field = (JSON.parse(answer.text) as { field?: unknown }).field;
        } catch {
          field = undefined;
        }
        if (input.method !== 'HEAD' && (typeof field !== 'string' || field === '')) report.failures.push({ problem: `${answer.status} names no field: ${answer.text.slice(0, 200)}`, input: preview({ ...input, path }) });
      } else {
        report.status2xx++;
      }
    }
    const dead = deadService(fuzz) ?? (admin.child.exitCode !== null ? `admin exited (${admin.child.exitCode})` : undefined);
    if (dead) report.failures.push({ problem: dead, input: '(after the admin-api inputs)' });
  }
  return report;
}
