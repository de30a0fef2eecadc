import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AdminApi } from '@conveyor/contracts';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import type { RunningService } from '../harness/services.js';
import { uniqueName } from '../harness/ids.js';
import { ADMIN_PASSWORD, AdminClient, startAdmin } from '../admin/admin-support.js';
import { rawRequest } from './admin-http.js';

const PER_USER = 5;
const PER_ADDRESS = 12;
const SETUP = 3;

/**
 * Sign-in limits against the real admin service and Redis, with requests from several loopback
 * addresses: guessing locks a name out for the guessing address only, parallel guesses cannot get past
 * the count, one address is bounded across names, and setup is bounded too.
 */
describe('admin API sign-in limits', () => {
  let sys: TestSystem;
  let admin: RunningService;
  const run = uniqueName('u');
  /** A loopback address of its own for each test, so their counts never meet. */
  let nextAddress = 2 + Math.floor(Math.random() * 200);
  const address = () => `127.0.${Math.floor(Math.random() * 250)}.${nextAddress++}`;

  const login = (from: string, username: string, password: string) =>
    rawRequest(admin.url, 'POST', `${AdminApi.ADMIN_API_BASE}/auth/login`, { body: JSON.stringify({ username, password }), localAddress: from });

  before(async () => {
    sys = await startTestSystem({ startServices: false });
    admin = await startAdmin(sys, { ADMIN_LOGIN_ATTEMPTS_PER_USER: String(PER_USER), ADMIN_LOGIN_ATTEMPTS_PER_ADDRESS: String(PER_ADDRESS), ADMIN_SETUP_ATTEMPTS_PER_ADDRESS: String(SETUP) });
    const api = new AdminClient(admin.url);
    await api.login();
    for (const name of ['racer', 'spread']) assert.equal((await api.call('POST', '/users', { username: `${name}-${run}`, password: ADMIN_PASSWORD, role: 'viewer' })).status, 201);
  });
  after(async () => {
    await sys?.stop();
  });

  test('guessing a user name locks it out for the guessing address only: the admin signs in from elsewhere', async () => {
    const attacker = address();
    for (let i = 0; i < PER_USER; i++) assert.equal((await login(attacker, 'admin', `guess ${i}`)).status, 401);
    const locked = await login(attacker, 'admin', ADMIN_PASSWORD);
    assert.equal(locked.status, 429, locked.text);
    assert.equal(JSON.parse(locked.text).code, 'rate_limited');
    assert.ok(Number(locked.headers['retry-after']) > 0);
    assert.equal((await login(address(), 'admin', ADMIN_PASSWORD)).status, 200, 'the real admin is not locked out');
  });

  test('parallel guesses each take their place in the count: no more than the limit reach the password check', async () => {
    const attacker = address();
    const answers = await Promise.all(Array.from({ length: 4 * PER_USER }, (_, i) => login(attacker, `racer-${run}`, `parallel guess ${i}`)));
    const statuses = answers.map((a) => a.status);
    assert.equal(statuses.filter((s) => s === 401).length, PER_USER, statuses.join(','));
    assert.equal(statuses.filter((s) => s === 429).length, 3 * PER_USER, statuses.join(','));
  });

  test('one address guessing across many names is stopped by a limit of its own; sign-ins that succeed do not count', async () => {
    const attacker = address();
    for (let i = 0; i < PER_ADDRESS; i++) assert.equal((await login(attacker, `nobody-${i}-${run}`, 'a guess')).status, 401);
    assert.equal((await login(attacker, `spread-${run}`, ADMIN_PASSWORD)).status, 429, 'even a right password, from this address');
    assert.equal((await login(address(), `spread-${run}`, ADMIN_PASSWORD)).status, 200);
    const office = address();
    for (let i = 0; i < PER_ADDRESS + 3; i++) assert.equal((await login(office, `spread-${run}`, ADMIN_PASSWORD)).status, 200, `sign-in ${i}`);
  });

  test('setup attempts are bounded per address as well', async () => {
    const attacker = address();
    const setup = () => rawRequest(admin.url, 'POST', `${AdminApi.ADMIN_API_BASE}/auth/setup`, { body: JSON.stringify({ token: 'cvsetup_guess', username: 'intruder', password: 'a long enough password' }), localAddress: attacker });
    for (let i = 0; i < SETUP; i++) assert.equal((await setup()).status, 409, 'setup is complete here');
    assert.equal((await setup()).status, 429);
  });
});
