import { test } from 'node:test';
import assert from 'node:assert/strict';
import 'reflect-metadata';
import { Reflector } from '@nestjs/core';
import type { ExecutionContext } from '@nestjs/common';
import { AdminApiError, type Principal } from '@conveyor/admin';
import { AdminAuthGuard, bearer, Public, RequireRole, RequireSession, sessionCookie } from './http.js';

class Routes {
  @Public()
  open() {}
  read() {}
  write() {}
  @RequireRole('viewer')
  viewerPost() {}
  @RequireSession()
  mint() {}
}

const principals: Record<string, Principal> = {
  'cvt_viewer': { username: 'dash', role: 'viewer', via: 'token', actor: 'token:t1' },
  'cvs_admin': { username: 'root', role: 'admin', via: 'session', actor: 'user:root' },
};

function guard() {
  const warnings: Array<{ obj: object; msg: string }> = [];
  const auth = {
    authenticateToken: async (t: string) => principals[t] ?? null,
    authenticateSession: async (s: string) => principals[s] ?? null,
  };
  return { guard: new AdminAuthGuard(new Reflector(), auth, { logger: { warn: (obj, msg) => void warnings.push({ obj, msg }) } }), warnings };
}

function context(handler: keyof Routes, method: string, headers: Record<string, string> = {}, path = '/api/v1/models'): ExecutionContext {
  const req = { method, path, headers, ip: '127.0.0.1' };
  return {
    getHandler: () => Routes.prototype[handler],
    getClass: () => Routes,
    switchToHttp: () => ({ getRequest: () => req, getResponse: () => ({}), getNext: () => undefined }),
  } as unknown as ExecutionContext;
}

const outcome = (p: Promise<boolean>) => p.then((ok) => (ok ? 'allowed' : 'denied'), (err: unknown) => (err instanceof AdminApiError ? `${err.statusCode} ${err.code}` : String(err)));

test('only routes marked public need nothing, whatever the path looks like', async () => {
  const { guard: g } = guard();
  assert.equal(await outcome(g.canActivate(context('open', 'POST'))), 'allowed');
  // The path decides nothing: an unmarked route is closed at any spelling, inside /api or not.
  for (const path of ['/api/v1/models', '/API/v1/models', '/Api/v1/models', '//api/v1/models', '/health/ready', '/']) {
    assert.equal(await outcome(g.canActivate(context('read', 'GET', {}, path))), '401 unauthenticated', path);
    assert.equal(await outcome(g.canActivate(context('write', 'DELETE', {}, path))), '401 unauthenticated', path);
  }
});

test('a sign-in-only route refuses tokens, even an admin token', async () => {
  const { guard: g } = guard();
  principals['cvt_admin'] = { username: 'ci', role: 'admin', via: 'token', actor: 'token:t2' };
  assert.equal(await outcome(g.canActivate(context('mint', 'POST', { authorization: 'Bearer cvt_admin' }))), '403 forbidden');
  assert.equal(await outcome(g.canActivate(context('mint', 'POST', { cookie: 'conveyor_session=cvs_admin' }))), 'allowed');
  assert.equal(await outcome(g.canActivate(context('mint', 'POST', { authorization: 'Bearer cvt_viewer' }))), '403 forbidden');
});

test('no credentials, or unknown ones, are 401 and logged without the secret', async () => {
  const { guard: g, warnings } = guard();
  assert.equal(await outcome(g.canActivate(context('read', 'GET'))), '401 unauthenticated');
  assert.equal(await outcome(g.canActivate(context('read', 'GET', { authorization: 'Bearer cvt_wrong-secret' }))), '401 unauthenticated');
  assert.equal(await outcome(g.canActivate(context('read', 'GET', { cookie: 'conveyor_session=cvs_stolen' }))), '401 unauthenticated');
  assert.equal(warnings.length, 3);
  assert.ok(!JSON.stringify(warnings).includes('wrong-secret') && !JSON.stringify(warnings).includes('cvs_stolen'));
});

test('a viewer reads (GET, or a route marked viewer) and gets 403 on writes; an admin writes', async () => {
  const { guard: g } = guard();
  const asViewer = { authorization: 'Bearer cvt_viewer' };
  assert.equal(await outcome(g.canActivate(context('read', 'GET', asViewer))), 'allowed');
  assert.equal(await outcome(g.canActivate(context('viewerPost', 'POST', asViewer))), 'allowed');
  assert.equal(await outcome(g.canActivate(context('write', 'PATCH', asViewer))), '403 forbidden');
  assert.equal(await outcome(g.canActivate(context('write', 'PATCH', { cookie: 'other=1; conveyor_session=cvs_admin' }))), 'allowed');
});

test('the cookie and the bearer token are read from their headers', () => {
  assert.equal(sessionCookie('a=1; conveyor_session=cvs_x%2By; b=2'), 'cvs_x+y');
  assert.equal(sessionCookie('a=1'), undefined);
  assert.equal(bearer('bearer  cvt_abc'), 'cvt_abc');
  assert.equal(bearer('Basic abc'), undefined);
});
