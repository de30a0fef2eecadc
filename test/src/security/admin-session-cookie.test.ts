import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AdminApi } from '@conveyor/contracts';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import type { RunningService } from '../harness/services.js';
import { ADMIN_PASSWORD, startAdmin } from '../admin/admin-support.js';
import { rawRequest } from './admin-http.js';

/**
 * The session cookie against the real admin service behind a proxy (ADMIN_TRUST_PROXY=1, as the
 * Kubernetes manifests set it): Secure when the sign-in came over HTTPS, and writes it authenticates
 * refused from another site.
 */
describe('admin API session cookie', () => {
  let sys: TestSystem;
  let admin: RunningService;
  const base = AdminApi.ADMIN_API_BASE;
  const body = JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD });
  const signIn = (headers: Record<string, string> = {}) => rawRequest(admin.url, 'POST', `${base}/auth/login`, { body, headers });
  const cookieOf = (a: { headers: Record<string, unknown> }) => [a.headers['set-cookie'] ?? []].flat().map(String).find((c) => c.startsWith(`${AdminApi.ADMIN_SESSION_COOKIE}=`))!;

  before(async () => {
    sys = await startTestSystem({ startServices: false });
    admin = await startAdmin(sys, { ADMIN_TRUST_PROXY: '1' });
  });
  after(async () => {
    await sys?.stop();
  });

  test('Secure when the proxy says the sign-in came over HTTPS, and not over plain HTTP', async () => {
    const https = await signIn({ 'x-forwarded-proto': 'https' });
    assert.equal(https.status, 200, https.text);
    assert.match(cookieOf(https), /;\s*Secure/i);
    assert.match(cookieOf(https), /;\s*HttpOnly/i);
    const plain = await signIn();
    assert.equal(plain.status, 200, plain.text);
    assert.doesNotMatch(cookieOf(plain), /;\s*Secure/i);
  });

  test('a write with the cookie from another origin is 403 naming the header; from the console\'s own origin it goes through', async () => {
    const cookie = cookieOf(await signIn()).split(';')[0]!;
    const user = (name: string) => JSON.stringify({ username: name, password: ADMIN_PASSWORD, role: 'viewer' });
    const forged = await rawRequest(admin.url, 'POST', `${base}/users`, { body: user('forged'), headers: { cookie, origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' } });
    assert.equal(forged.status, 403, forged.text);
    assert.equal(JSON.parse(forged.text).field, 'header.sec-fetch-site');
    const foreignOrigin = await rawRequest(admin.url, 'POST', `${base}/users`, { body: user('forged2'), headers: { cookie, origin: 'https://evil.example' } });
    assert.equal(foreignOrigin.status, 403, foreignOrigin.text);
    assert.equal(JSON.parse(foreignOrigin.text).field, 'header.origin');
    const listed = await rawRequest(admin.url, 'GET', `${base}/users`, { headers: { cookie } });
    assert.ok(!listed.text.includes('forged'), 'nothing was created');
    const own = new URL(admin.url).origin;
    const real = await rawRequest(admin.url, 'POST', `${base}/users`, { body: user('real-one'), headers: { cookie, origin: own, 'sec-fetch-site': 'same-origin' } });
    assert.equal(real.status, 201, real.text);
  });
});
