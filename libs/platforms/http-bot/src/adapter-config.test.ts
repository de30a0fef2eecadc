import { test } from 'node:test';
import assert from 'node:assert/strict';
import { callbackTimeoutMs, outboundSigningKey, parseAdapterConfig, syncWaitMs } from './adapter-config.js';

test('defaults for an empty config', () => {
  assert.deepEqual(parseAdapterConfig({}), {
    inbound_secret: '',
    callback_url: '',
    outbound_secret: '',
    default_session_type: 'person',
    signature_required: true,
    callback_timeout: 15,
    callback_max_retries: 3,
  });
  assert.deepEqual(parseAdapterConfig(undefined).signature_required, true);
});

test('signature_required uses Python truthiness; only an absent key defaults to true', () => {
  const flag = (v: unknown) => parseAdapterConfig({ signature_required: v }).signature_required;
  assert.equal(flag(false), false);
  assert.equal(flag(0), false);
  assert.equal(flag(''), false);
  assert.equal(flag(null), false);
  assert.equal(flag(true), true);
  assert.equal(flag('false'), true);
  assert.equal(flag(1), true);
});

test('default_session_type is group only for the exact value', () => {
  assert.equal(parseAdapterConfig({ default_session_type: 'group' }).default_session_type, 'group');
  assert.equal(parseAdapterConfig({ default_session_type: 'GROUP' }).default_session_type, 'person');
  assert.equal(parseAdapterConfig({ default_session_type: null }).default_session_type, 'person');
});

test('numeric keys follow int(value); invalid values are config errors', () => {
  const cfg = parseAdapterConfig({ callback_timeout: '20', callback_max_retries: 2.7 });
  assert.equal(cfg.callback_timeout, 20);
  assert.equal(cfg.callback_max_retries, 2);
  assert.equal(parseAdapterConfig({ callback_timeout: 0 }).callback_timeout, 0);
  assert.throws(() => parseAdapterConfig({ callback_timeout: '15.5' }));
  assert.throws(() => parseAdapterConfig({ callback_timeout: null }));
  assert.throws(() => parseAdapterConfig({ callback_max_retries: 'many' }));
});

test('derived values', () => {
  const base = parseAdapterConfig({ inbound_secret: 'in' });
  assert.equal(outboundSigningKey(base), 'in');
  assert.equal(outboundSigningKey(parseAdapterConfig({ inbound_secret: 'in', outbound_secret: 'out' })), 'out');
  assert.equal(outboundSigningKey(parseAdapterConfig({ inbound_secret: null })), '');
  assert.equal(callbackTimeoutMs(base), 15_000);
  assert.equal(callbackTimeoutMs(parseAdapterConfig({ callback_timeout: 0 })), undefined);
  assert.equal(syncWaitMs(base), 60_000);
});

test('a stored config object is parsed once; a new object (a changed row) is parsed again', () => {
  const row = { callback_url: 'http://a/cb', inbound_secret: 's' };
  const first = parseAdapterConfig(row);
  assert.equal(parseAdapterConfig(row), first, 'the same row gives the same parsed object');
  const changed = parseAdapterConfig({ ...row, callback_url: 'http://b/cb' });
  assert.equal(changed.callback_url, 'http://b/cb');
  assert.throws(() => parseAdapterConfig({ callback_max_retries: 'many' }));
});
