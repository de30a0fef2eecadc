import { test } from 'node:test';
import assert from 'node:assert/strict';
import { csvField, resolveRange } from './monitoring.js';
import { AdminApiError } from './errors.js';

const now = new Date('2026-12-01T12:00:00.000Z');

test('named ranges end now with their bucket size; a custom range gets the smallest bucket keeping 120 or fewer', () => {
  assert.deepEqual(resolveRange({ range: '1h' }, now), { from: new Date('2026-12-01T11:00:00.000Z'), to: now, bucketSeconds: 60 });
  assert.equal(resolveRange({ range: '24h' }, now).bucketSeconds, 3_600);
  assert.equal(resolveRange({ range: '7d' }, now).bucketSeconds, 21_600);
  assert.equal(resolveRange({ range: '30d' }, now).bucketSeconds, 86_400);
  assert.equal(resolveRange({ range: 'custom', from: '2026-12-01T00:00:00Z', to: '2026-12-01T02:00:00Z' }, now).bucketSeconds, 60);
  assert.equal(resolveRange({ range: 'custom', from: '2026-11-01T00:00:00Z', to: '2026-11-03T00:00:00Z' }, now).bucketSeconds, 3_600);
});

test('a custom range needs both ends, in order, at most 90 days apart', () => {
  assert.throws(() => resolveRange({ range: 'custom', from: '2026-12-01T00:00:00Z' }, now), AdminApiError);
  assert.throws(() => resolveRange({ range: 'custom', from: '2026-12-01T02:00:00Z', to: '2026-12-01T01:00:00Z' }, now), AdminApiError);
  assert.throws(() => resolveRange({ range: 'custom', from: '2026-01-01T00:00:00Z', to: '2026-12-01T00:00:00Z' }, now), AdminApiError);
});

test('CSV fields are quoted when they must be, and a formula-like text is neutralized', () => {
  assert.equal(csvField(null), '');
  assert.equal(csvField(12.5), '12.5');
  assert.equal(csvField(-3), '-3');
  assert.equal(csvField('plain'), 'plain');
  assert.equal(csvField('a, "b"\nc'), '"a, ""b""\nc"');
  assert.equal(csvField('=HYPERLINK("x")'), `"'=HYPERLINK(""x"")"`);
  assert.equal(csvField('@cmd'), "'@cmd");
});
