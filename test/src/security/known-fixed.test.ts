import { test } from 'node:test';
import assert from 'node:assert/strict';
import { belowMinimum, compareVersions, loadRepo, splitPins } from './known-fixed.js';

test('version comparison orders numerically and puts prereleases first', () => {
  assert.ok(compareVersions('8.18.3', '8.21.1') < 0);
  assert.ok(compareVersions('8.21.1', '8.21.1') === 0);
  assert.ok(compareVersions('8.100.0', '8.21.1') > 0);
  assert.ok(compareVersions('8.21.1-beta.1', '8.21.1') < 0);
  assert.ok(compareVersions('10.0.0', '9.9.9') > 0);
});

test('the checker finds an old copy wherever it is installed, nested ones included', () => {
  const lock = { packages: {
    '': { dependencies: {} },
    'libs/a': { dependencies: { ws: '8.18.3' } },
    'libs/b': { dependencies: { ws: '8.21.1' } },
    'node_modules/ws': { version: '8.21.1' },
    'node_modules/sdk/node_modules/ws': { version: '8.18.3' },
    'node_modules/@conveyor/a': { link: true },
  } };
  const fixed = { minimums: { ws: '8.21.1' } };
  assert.deepEqual(belowMinimum(lock, fixed), [
    { name: 'ws', location: 'node_modules/sdk/node_modules/ws', installed: '8.18.3', minimum: '8.21.1' },
  ]);
  assert.deepEqual(splitPins(lock, fixed), [{ name: 'ws', specs: { 'libs/a': '8.18.3', 'libs/b': '8.21.1' } }]);
});

test('package-lock.json installs nothing below the known-fixed minimums', () => {
  const { lock, fixed } = loadRepo();
  assert.ok(Object.keys(fixed.minimums).length > 0, 'security/known-fixed.json lists no packages');
  assert.deepEqual(belowMinimum(lock, fixed), [], 'installed versions below security/known-fixed.json; raise them and run npm install');
});

test('every workspace pins the same version of each listed package', () => {
  const { lock, fixed } = loadRepo();
  assert.deepEqual(splitPins(lock, fixed), []);
});
