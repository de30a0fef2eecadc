import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { platforms } from '@conveyor/platforms';
import { platformList } from './deployment.js';

/** libs/platforms, from this file's place in src/ or dist/. */
const PLATFORMS_DIR = fileURLToPath(new URL('../../platforms/', import.meta.url));

test('GET /platforms lists every bot platform the registry has, and the registry has every platform package', () => {
  const packages = readdirSync(PLATFORMS_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory() && d.name !== 'registry' && existsSync(path.join(PLATFORMS_DIR, d.name, 'package.json')))
    .map((d) => d.name)
    .sort();
  assert.ok(packages.length > 0, `platform packages under ${PLATFORMS_DIR}`);
  // One package per platform, named as its adapter: a package left out of the registry is caught here.
  assert.deepEqual(platforms.all().map((p) => p.name).sort(), packages);
  const listed = platformList().items.map((p) => p.name).sort();
  assert.deepEqual(listed, [...platforms.configurableNames()].sort(), 'every platform a bot can use, and only those');
  assert.equal(new Set(listed).size, listed.length);
  for (const p of platformList().items) assert.equal(typeof p.configSchema, 'object', p.name);
});
