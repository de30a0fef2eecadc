import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ZodError } from 'zod';
import { callbackTimeoutMs, outboundSigningKey, parseAdapterConfig, safeParseAdapterConfig, syncWaitMs } from './adapter-config.js';

test('defaults for a config with only its inbound secret', () => {
  assert.deepEqual(parseAdapterConfig({ inbound_secret: 'in' }), {
    inbound_secret: 'in',
    callback_url: '',
    outbound_secret: '',
    default_session_type: 'person',
    signature_required: true,
    callback_timeout: 15,
    callback_max_retries: 3,
  });
});

/** The ZodError's issue paths, or [] when the config parses. */
function refused(raw: unknown): string[] {
  const r = safeParseAdapterConfig(raw);
  return r.success ? [] : r.error.issues.map((i) => i.path.join('.'));
}

test('an empty inbound_secret is refused while signatures are required: anybody can compute an HMAC with the empty key', () => {
  assert.deepEqual(refused({}), ['inbound_secret']);
  assert.deepEqual(refused(undefined), ['inbound_secret']);
  assert.deepEqual(refused({ inbound_secret: '' }), ['inbound_secret']);
  assert.deepEqual(refused({ inbound_secret: null, callback_url: 'http://cb' }), ['inbound_secret']);
  assert.deepEqual(refused({ inbound_secret: '', signature_required: true }), ['inbound_secret']);
  assert.throws(() => parseAdapterConfig({ inbound_secret: '' }), (err: unknown) => err instanceof ZodError && err.issues[0].path[0] === 'inbound_secret');
  assert.deepEqual(refused({ inbound_secret: 's' }), []);
});

test('signature_required is off only by an explicit false; a falsy non-boolean is refused, a truthy one means true', () => {
  const flag = (v: unknown) => parseAdapterConfig({ inbound_secret: 's', signature_required: v }).signature_required;
  assert.equal(flag(false), false);
  assert.equal(parseAdapterConfig({ signature_required: false }).signature_required, false, 'no secret needed when verification is off');
  for (const v of [0, '', null, []]) assert.deepEqual(refused({ inbound_secret: 's', signature_required: v }), ['signature_required'], JSON.stringify(v));
  assert.equal(flag(true), true);
  assert.equal(flag('false'), true);
  assert.equal(flag(1), true);
});

test('default_session_type is group only for the exact value', () => {
  const type = (v: unknown) => parseAdapterConfig({ inbound_secret: 's', default_session_type: v }).default_session_type;
  assert.equal(type('group'), 'group');
  assert.equal(type('GROUP'), 'person');
  assert.equal(type(null), 'person');
});

test('numeric keys follow int(value); invalid values are config errors', () => {
  const cfg = parseAdapterConfig({ inbound_secret: 's', callback_timeout: '20', callback_max_retries: 2.7 });
  assert.equal(cfg.callback_timeout, 20);
  assert.equal(cfg.callback_max_retries, 2);
  assert.equal(parseAdapterConfig({ inbound_secret: 's', callback_timeout: 0 }).callback_timeout, 0);
  assert.deepEqual(refused({ inbound_secret: 's', callback_timeout: '15.5' }), ['callback_timeout']);
  assert.deepEqual(refused({ inbound_secret: 's', callback_timeout: null }), ['callback_timeout']);
  assert.deepEqual(refused({ inbound_secret: 's', callback_max_retries: 'many' }), ['callback_max_retries']);
});

test('derived values', () => {
  const base = parseAdapterConfig({ inbound_secret: 'in' });
  assert.equal(outboundSigningKey(base), 'in');
  assert.equal(outboundSigningKey(parseAdapterConfig({ inbound_secret: 'in', outbound_secret: 'out' })), 'out');
  assert.equal(outboundSigningKey(parseAdapterConfig({ inbound_secret: null, signature_required: false })), '');
  assert.equal(callbackTimeoutMs(base), 15_000);
  assert.equal(callbackTimeoutMs(parseAdapterConfig({ inbound_secret: 'in', callback_timeout: 0 })), undefined);
  assert.equal(syncWaitMs(base), 60_000);
});

test('a stored config object is parsed once; a new object (a changed row) is parsed again', () => {
  const row = { callback_url: 'http://a/cb', inbound_secret: 's' };
  const first = parseAdapterConfig(row);
  assert.equal(parseAdapterConfig(row), first, 'the same row gives the same parsed object');
  const changed = parseAdapterConfig({ ...row, callback_url: 'http://b/cb' });
  assert.equal(changed.callback_url, 'http://b/cb');
  assert.throws(() => parseAdapterConfig({ inbound_secret: 's', callback_max_retries: 'many' }));
});
