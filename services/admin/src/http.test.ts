import { test } from 'node:test';
import assert from 'node:assert/strict';
import 'reflect-metadata';
import { Reflector } from '@nestjs/core';
import type { ExecutionContext } from '@nestjs/common';
import { AdminApiError, type Principal } from '@conveyor/admin';
import { AdminAuthGuard, bearer, crossSiteWrite, Public, RequireRole, RequireSession, sessionCookie } from './http.js';

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
  const settings = { publicUrl: 'https://console.example.com' };
  return { guard: new AdminAuthGuard(new Reflector(), auth, { logger: { warn: (obj, msg) => void warnings.push({ obj, msg }) } }, settings), warnings };
}

function context(handler: keyof Routes, method: string, headers: Record<string, string> = {}, path = '/api/v1/models'): ExecutionContext {
  const req = { method, path, headers, ip: '127.0.0.1', protocol: 'http', get: (name: string) => headers[name.toLowerCase()] };
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

test('a write with the session cookie from another site is refused; reads, tokens and the own origin pass', async () => {
  const { guard: g, warnings } = guard();
  const cookie = { cookie: 'conveyor_session=cvs_admin', host: 'admin:8084' };
  assert.equal(await outcome(g.canActivate(context('write', 'POST', { ...cookie, origin: 'https://evil.example' }))), '403 forbidden');
  assert.equal(await outcome(g.canActivate(context('write', 'DELETE', { ...cookie, 'sec-fetch-site': 'cross-site' }))), '403 forbidden');
  assert.equal(await outcome(g.canActivate(context('write', 'PATCH', { ...cookie, 'sec-fetch-site': 'same-site', origin: 'https://console.example.com' }))), '403 forbidden', 'a sibling subdomain is another site for the API');
  assert.ok(warnings.some((w) => w.msg.includes('cross-site')));
  assert.equal(await outcome(g.canActivate(context('write', 'POST', { ...cookie, origin: 'https://console.example.com' }))), 'allowed', 'the public URL');
  assert.equal(await outcome(g.canActivate(context('write', 'POST', { ...cookie, origin: 'http://admin:8084' }))), 'allowed', 'the address it was reached at');
  assert.equal(await outcome(g.canActivate(context('write', 'POST', { ...cookie, 'sec-fetch-site': 'same-origin' }))), 'allowed');
  assert.equal(await outcome(g.canActivate(context('write', 'POST', cookie))), 'allowed', 'no browser headers: not a browser');
  assert.equal(await outcome(g.canActivate(context('read', 'GET', { ...cookie, origin: 'https://evil.example' }))), 'allowed', 'reads change nothing');
  principals['cvt_admin'] = { username: 'ci', role: 'admin', via: 'token', actor: 'token:t2' };
  assert.equal(await outcome(g.canActivate(context('write', 'POST', { authorization: 'Bearer cvt_admin', origin: 'https://evil.example' }))), 'allowed', 'a token is no ambient credential');
});

test('crossSiteWrite names the header it judged', () => {
  const req = (headers: Record<string, string>) => ({ method: 'POST', protocol: 'https', headers, get: (n: string) => headers[n.toLowerCase()] });
  assert.match(crossSiteWrite(req({ origin: 'https://x.example', host: 'c.example' }), 'https://c.example') ?? '', /^header\.origin: /);
  assert.match(crossSiteWrite(req({ 'sec-fetch-site': 'cross-site' }), 'https://c.example') ?? '', /^header\.sec-fetch-site: /);
  assert.equal(crossSiteWrite(req({ origin: 'https://c.example', host: 'c.example' }), 'http://localhost:8084'), undefined);
});
