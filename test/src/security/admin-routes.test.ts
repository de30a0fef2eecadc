import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AdminApi } from '@conveyor/contracts';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import type { RunningService } from '../harness/services.js';
import { uniqueName } from '../harness/ids.js';
import { ADMIN_PASSWORD, AdminClient, startAdmin } from '../admin/admin-support.js';
import { Identity, rawRequest, type RawAnswer } from './admin-http.js';

const API = AdminApi.ADMIN_API_BASE;
/** Routes that answer without sign-in, outside the API's own list: probes and the metrics scrape. */
const OPERATIONS_ROUTES = new Set(['GET /health/live', 'GET /health/ready', 'GET /metrics']);
/** The OpenAPI document and its page: served beside the guard, and holding no data. */
const UNGUARDED_DOCS = /^\/api\/docs(?:-json|-yaml|\/|$)/;

type Access = AdminApi.RouteEntry['access'];

/**
 * The spellings a request for `path` may take that a router, a proxy or a guard could read as another
 * path: case, percent-encoding, doubled slashes, a trailing slash, dot segments.
 */
function variants(path: string): string[] {
  const segments = path.split('/');
  const last = segments.length - 1;
  const encodeFirst = (s: string) => (s ? `%${s.charCodeAt(0).toString(16).toUpperCase()}${s.slice(1)}` : s);
  const out = [
    path.toUpperCase(),
    path.replace(/^\/api\//, '/API/'),
    path.replace(/^\/([a-z])/, (_m, c: string) => `/${c.toUpperCase()}`),
    segments.map((s, i) => (i === 1 ? encodeFirst(s) : s)).join('/'),
    segments.map((s, i) => (i === last ? encodeFirst(s) : s)).join('/'),
    `/${path}`,
    path.replace(/\/([^/]+)$/, '//$1'),
    `${path}/`,
    path.replace(/\/([^/]+)$/, '/./$1'),
    path.replace(/\/([^/]+)$/, '/x/../$1'),
  ];
  return [...new Set(out)].filter((v) => v !== path);
}

/** Nothing but the AdminError of a refusal or of "no such route": no data in the body. */
function assertRefusal(answer: RawAnswer, status: number, what: string): void {
  assert.equal(answer.status, status, `${what}: expected ${status}, got ${answer.status} ${answer.text.slice(0, 300)}`);
  const body = JSON.parse(answer.text) as AdminApi.AdminError;
  assert.deepEqual(Object.keys(body).filter((k) => !['statusCode', 'code', 'message', 'field', 'issues'].includes(k)), [], `${what}: ${answer.text}`);
  assert.equal(body.statusCode, status, what);
}

/** The admin API against its real router: each route as its access allows, at every spelling. */
describe('admin API routes: access by route, at any spelling', () => {
  let sys: TestSystem;
  let admin: RunningService;
  let table: AdminApi.RouteEntry[];
  let identities: Identity[];
  const run = uniqueName('probe');

  before(async () => {
    sys = await startTestSystem({ startServices: false });
    admin = await startAdmin(sys);
    const api = new AdminClient(admin.url);
    await api.login();
    const password = `viewer password ${run}`;
    assert.equal((await api.call('POST', '/users', { username: `viewer-${run}`, password, role: 'viewer' })).status, 201);
    const viewerToken = await api.call('POST', '/tokens', { name: `viewer-${run}`, role: 'viewer' });
    const adminToken = await api.call('POST', '/tokens', { name: `admin-${run}`, role: 'admin' });
    assert.equal(viewerToken.status, 201);
    assert.equal(adminToken.status, 201);
    identities = [
      Identity.anonymous(admin.url),
      Identity.token('viewer token', 'viewer', admin.url, viewerToken.body.secret),
      await Identity.session('viewer session', 'viewer', admin.url, `viewer-${run}`, password),
      Identity.token('admin token', 'admin', admin.url, adminToken.body.secret),
      await Identity.session('admin session', 'admin', admin.url, 'admin', ADMIN_PASSWORD),
    ];
    const answer = await api.call('GET', '/routes');
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    table = AdminApi.RouteTable.parse(answer.body).items;
  });
  after(async () => {
    await sys?.stop();
  });

  /** Every guarded route of the router, with a request path whose parameters are filled in. */
  const routes = () => table.filter((r) => r.method !== 'USE').map((r) => ({ ...r, key: `${r.method} ${r.path}`, url: r.path.replace(/:[A-Za-z]+/g, run) }));

  /** What `who` must get from a route with `access`: a refusal status, or null for "let through". */
  function refusal(who: Identity, access: Access, sessionOnly: boolean): 401 | 403 | null {
    if (access === 'public' || access === 'unguarded') return null;
    if (who.role === 'anonymous') return 401;
    if (access === 'admin' && who.role !== 'admin') return 403;
    if (sessionOnly && who.via !== 'session') return 403;
    return null;
  }

  test('the router holds exactly the declared API routes, each guarded as declared; nothing under the API is unguarded', () => {
    const live = routes();
    assert.ok(live.length >= AdminApi.ADMIN_ROUTES.length, `the route table is too short: ${live.length}`);
    const declared = new Map<string, { access: Access; sessionOnly: boolean }>(AdminApi.ADMIN_ROUTES.map((r) => [`${r[0]} ${API}${r[1]}`, { access: r[2], sessionOnly: r[3] === 'session' }]));
    const api = live.filter((r) => r.path.startsWith(`${API}/`) || r.path === API);
    assert.deepEqual(api.map((r) => r.key).sort(), [...declared.keys()].sort(), 'the live API routes are the declared ones');
    for (const r of api) assert.deepEqual({ access: r.access, sessionOnly: r.sessionOnly }, declared.get(r.key), r.key);
    for (const r of live.filter((x) => !api.includes(x))) {
      if (OPERATIONS_ROUTES.has(r.key)) assert.equal(r.access, 'public', r.key);
      else assert.ok(r.access === 'unguarded' && r.method === 'GET' && UNGUARDED_DOCS.test(r.path), `${r.key} (${r.access}) is neither an API route, a probe nor the API document`);
    }
    // Mounts see every method under their prefix: none may be inside the API but the body parser.
    for (const m of table.filter((r) => r.method === 'USE' && r.path.toLowerCase().startsWith(`${API}`))) assert.fail(`a mount inside the API: ${m.path}`);
  });

  test('without credentials every non-public route is 401, a viewer gets 403 on admin routes, tokens 403 on sign-in-only routes; the rest reach their handler', async () => {
    for (const r of routes()) {
      const body = r.method === 'GET' || r.method === 'HEAD' ? undefined : '{}';
      for (const who of identities) {
        const answer = await who.call(r.method, r.url, body);
        const what = `${who.label} ${r.method} ${r.url} (${r.access}${r.sessionOnly ? ', sign-in only' : ''})`;
        const refused = refusal(who, r.access, r.sessionOnly);
        if (refused) {
          assertRefusal(answer, refused, what);
          assert.equal(JSON.parse(answer.text).code, refused === 401 ? 'unauthenticated' : 'forbidden', what);
        } else {
          assert.ok(answer.status !== 401 && answer.status !== 403, `${what}: let through expected, got ${answer.status} ${answer.text.slice(0, 300)}`);
        }
      }
    }
  });

  test('any other spelling of a route reaches the same guard or no route at all: never data without the route\'s role', async () => {
    let tried = 0;
    for (const r of routes()) {
      const body = r.method === 'GET' || r.method === 'HEAD' ? undefined : '{}';
      for (const who of identities) {
        const canonical = refusal(who, r.access, r.sessionOnly);
        for (const path of variants(r.url)) {
          const answer = await who.call(r.method, path, body);
          tried++;
          const what = `${who.label} ${r.method} ${path} (a spelling of ${r.url}, ${r.access})`;
          if (answer.status === 404) {
            assertRefusal(answer, 404, what);
            continue;
          }
          // Reached a route: then it must be refused exactly as the route itself is.
          if (canonical) assertRefusal(answer, canonical, what);
          else assert.ok(answer.status !== 401 && answer.status !== 403, `${what}: ${answer.status}`);
          assert.ok(!(canonical && answer.status >= 200 && answer.status < 300), what);
        }
      }
    }
    assert.ok(tried > 1000, `only ${tried} requests`);
  });

  test('the probes answer at their one spelling on the admin service and on the message path\'s services', async () => {
    assert.equal((await rawRequest(admin.url, 'GET', '/health/live')).status, 200);
    for (const path of ['/HEALTH/live', '/Health/Live', '/health/live/', '//health/live', '/health/%6Cive']) {
      assert.equal((await rawRequest(admin.url, 'GET', path)).status, 404, path);
    }
    const ingress = await sys.services.start('ingress');
    assert.equal((await rawRequest(ingress.url, 'GET', '/health/ready')).status, 200);
    assert.equal((await rawRequest(ingress.url, 'GET', '/HEALTH/ready')).status, 404);
    assert.equal((await rawRequest(ingress.url, 'GET', '/health/ready/')).status, 404);
    // A webhook's trailing segments still reach the bot's handler, which answers in its own words.
    const nestNotFound = (a: RawAnswer) => a.status === 404 && a.text.includes('Cannot ');
    for (const tail of ['', '/sync', '/reset', '/some/deeper/path']) {
      const answer = await rawRequest(ingress.url, 'POST', `/bots/${sys.botId}${tail}`, { body: '{}' });
      assert.ok(!nestNotFound(answer), `/bots/{id}${tail}: ${answer.status} ${answer.text}`);
    }
    assert.ok(nestNotFound(await rawRequest(ingress.url, 'POST', `/BOTS/${sys.botId}/sync`, { body: '{}' })));
  });
});
