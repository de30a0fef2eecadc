import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useTempDatabase } from '@conveyor/persistence/testing';
import { AuthStore } from './auth.js';
import { AdminApiError } from './errors.js';
import { hashSecret } from './secrets.js';

const database = useTempDatabase();

/** Each test starts from a first start: no users, no audit rows. */
async function fresh() {
  const { prisma } = database();
  await prisma.adminUser.deleteMany();
  await prisma.auditEntry.deleteMany();
  return prisma;
}
const PASSWORD = 'a long enough password';

test('first start without a password hands out one setup token, once; setup with it creates the admin and signs in', async () => {
  const { prisma } = database();
  const auth = new AuthStore(prisma, { sessionTtlMs: 60_000 });
  const first = await auth.bootstrap({ username: 'admin' });
  assert.match(first.setupToken ?? '', /^cvsetup_/);
  assert.deepEqual(await auth.bootstrap({ username: 'admin' }), {}, 'a second replica or restart prints nothing');
  assert.equal((await prisma.adminSetupToken.findFirstOrThrow()).tokenHash, hashSecret(first.setupToken!));
  await assert.rejects(auth.completeSetup({ token: 'cvsetup_wrong', username: 'root', password: PASSWORD }), (err: AdminApiError) => err.code === 'unauthenticated');
  const done = await auth.completeSetup({ token: first.setupToken!, username: 'root', password: PASSWORD });
  assert.equal(done.principal.role, 'admin');
  assert.equal((await auth.authenticateSession(done.session))?.username, 'root');
  await assert.rejects(auth.completeSetup({ token: first.setupToken!, username: 'again', password: PASSWORD }), (err: AdminApiError) => err.code === 'conflict');
  assert.equal(await prisma.adminSetupToken.count(), 0);
});

test('sessions are stored hashed and expire; logout ends them', async () => {
  const prisma = await fresh();
  let now = new Date('2026-01-01T00:00:00Z');
  const auth = new AuthStore(prisma, { sessionTtlMs: 60_000, now: () => now });
  await auth.bootstrap({ username: 'ops', password: PASSWORD });
  assert.equal(await auth.login('ops', 'wrong password!'), null);
  assert.equal(await auth.login('nobody', PASSWORD), null);
  const a = await auth.login('ops', PASSWORD);
  assert.ok(a);
  assert.equal(await prisma.adminSession.count({ where: { tokenHash: a.session } }), 0, 'the cookie value itself is not stored');
  now = new Date(now.getTime() + 61_000);
  assert.equal(await auth.authenticateSession(a.session), null, 'expired');
  assert.equal(await auth.sweepExpiredSessions(), 1);
  const b = await auth.login('ops', PASSWORD);
  await auth.logout(b!.session);
  assert.equal(await auth.authenticateSession(b!.session), null);
});

test('API tokens carry their role until revoked; the last admin cannot be removed or demoted', async () => {
  const prisma = await fresh();
  const auth = new AuthStore(prisma, { sessionTtlMs: 60_000 });
  await auth.bootstrap({ username: 'boss', password: PASSWORD });
  const boss = { username: 'boss', role: 'admin' as const, via: 'session' as const, actor: 'user:boss' };
  const { token, secret } = await auth.createToken(boss, { name: 'ci', role: 'viewer' });
  assert.deepEqual(await auth.authenticateToken(secret), { username: 'ci', role: 'viewer', via: 'token', actor: `token:${token.id}` });
  await auth.revokeToken(boss, token.id);
  assert.equal(await auth.authenticateToken(secret), null);
  await assert.rejects(auth.deleteUser(boss, 'boss'), (err: AdminApiError) => err.code === 'conflict');
  await assert.rejects(auth.updateUser(boss, 'boss', { role: 'viewer' }), (err: AdminApiError) => err.code === 'conflict');
  await auth.createUser(boss, { username: 'second', password: PASSWORD, role: 'admin' });
  await auth.updateUser(boss, 'boss', { role: 'viewer' });
  assert.deepEqual((await prisma.auditEntry.findMany({ orderBy: { id: 'asc' } })).map((e) => `${e.resource} ${e.action}`), ['user create', 'api-token create', 'api-token revoke', 'user create', 'user update']);
});

test('a disabled user cannot sign in and their sessions end; enabled again, they can; the last active admin cannot be disabled', async () => {
  const prisma = await fresh();
  const auth = new AuthStore(prisma, { sessionTtlMs: 60_000 });
  await auth.bootstrap({ username: 'chief', password: PASSWORD });
  const chief = { username: 'chief', role: 'admin' as const, via: 'session' as const, actor: 'user:chief' };
  await assert.rejects(auth.updateUser(chief, 'chief', { disabled: true }), (err: AdminApiError) => err.code === 'conflict');
  await auth.createUser(chief, { username: 'deputy', password: PASSWORD, role: 'admin' });
  const session = await auth.login('deputy', PASSWORD);
  assert.ok(session);
  assert.equal((await auth.updateUser(chief, 'deputy', { disabled: true })).disabled, true);
  assert.equal(await auth.authenticateSession(session.session), null, 'the session ended');
  assert.equal(await auth.login('deputy', PASSWORD), null, 'sign-in refused like a wrong password');
  await assert.rejects(auth.updateUser(chief, 'chief', { role: 'viewer' }), (err: AdminApiError) => err.code === 'conflict', 'a disabled admin does not count');
  assert.deepEqual((await auth.listUsers()).map((u) => `${u.username}:${u.disabled}`), ['chief:false', 'deputy:true']);
  await auth.updateUser(chief, 'deputy', { disabled: false });
  assert.ok(await auth.login('deputy', PASSWORD));
});

test('a token acts for its creator: disabling or deleting them revokes it, demoting them caps it, and it expires by default', async () => {
  const prisma = await fresh();
  let now = new Date('2026-01-01T00:00:00Z');
  const auth = new AuthStore(prisma, { sessionTtlMs: 60_000, now: () => now });
  await auth.bootstrap({ username: 'lead', password: PASSWORD });
  const lead = { username: 'lead', role: 'admin' as const, via: 'session' as const, actor: 'user:lead' };
  for (const username of ['ops', 'gone']) await auth.createUser(lead, { username, password: PASSWORD, role: 'admin' });
  const as = (username: string) => ({ username, role: 'admin' as const, via: 'session' as const, actor: `user:${username}` });

  const ops = await auth.createToken(as('ops'), { name: 'ops-ci', role: 'admin' });
  assert.equal(ops.token.expiresAt, '2026-04-01T00:00:00.000Z', '90 days when no expiry is given');
  assert.equal((await auth.authenticateToken(ops.secret))?.role, 'admin');
  await auth.updateUser(lead, 'ops', { role: 'viewer' });
  assert.equal((await auth.authenticateToken(ops.secret))?.role, 'viewer', 'never more than the creator has now');
  await auth.updateUser(lead, 'ops', { disabled: true });
  assert.equal(await auth.authenticateToken(ops.secret), null, 'the creator disabled');
  await auth.updateUser(lead, 'ops', { disabled: false });
  assert.equal(await auth.authenticateToken(ops.secret), null, 'revoked for good, not paused');

  const gone = await auth.createToken(as('gone'), { name: 'gone-ci', role: 'viewer' });
  await auth.deleteUser(lead, 'gone');
  assert.equal(await auth.authenticateToken(gone.secret), null, 'the creator deleted');
  assert.ok((await prisma.apiToken.findUniqueOrThrow({ where: { id: gone.token.id } })).revokedAt);

  const asToken = { username: 'lead-ci', role: 'admin' as const, via: 'token' as const, actor: 'token:x' };
  await assert.rejects(auth.createToken(asToken, { name: 'minted', role: 'admin' }), (err: AdminApiError) => err.code === 'forbidden');

  const short = await auth.createToken(lead, { name: 'short', role: 'viewer', expiresInDays: 1 });
  now = new Date(now.getTime() + 86_400_000);
  assert.equal(await auth.authenticateToken(short.secret), null, 'expired');
  assert.deepEqual((await prisma.auditEntry.findMany({ where: { resource: 'api-token', action: 'revoke' } })).map((e) => e.resourceId).sort(), [ops.token.id, gone.token.id].sort());
});
