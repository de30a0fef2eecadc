import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { evalScript } from './index.js';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
after(() => redis.disconnect());

test('a script runs on first use (server does not know it) and by SHA afterwards', async () => {
  // A body unique to this run, so the server cannot have it cached from earlier runs.
  const script = `-- ${randomBytes(8).toString('hex')}\nreturn tonumber(ARGV[1]) + 1`;
  assert.equal(await evalScript(redis, script, 0, 41), 42);
  const [known] = (await redis.script('EXISTS', (await import('node:crypto')).createHash('sha1').update(script).digest('hex'))) as number[];
  assert.equal(known, 1, 'the server cached it');
  assert.equal(await evalScript(redis, script, 0, 1), 2);
});

test('a script error is reported, not retried as NOSCRIPT', async () => {
  await assert.rejects(evalScript(redis, `return redis.call('NOPE')`, 0), /Unknown Redis command|unknown command/i);
});

test('includes: a fragment is inserted once where first named, nested includes expand, and the script runs with them', async () => {
  const { mkdtempSync, mkdirSync, writeFileSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const path = await import('node:path');
  const { loadScripts } = await import('./index.js');
  const dir = mkdtempSync(path.join(tmpdir(), 'lua-'));
  try {
    mkdirSync(path.join(dir, 'includes'));
    writeFileSync(path.join(dir, 'includes', 'double.lua'), 'local function double(x) return x * 2 end\n');
    writeFileSync(path.join(dir, 'includes', 'quad.lua'), '--- @include "double"\nlocal function quad(x) return double(double(x)) end\n');
    writeFileSync(path.join(dir, 'calc-0.lua'), `-- ${randomBytes(8).toString('hex')}\n--- @include "quad"\n--- @include "double"\nreturn quad(tonumber(ARGV[1])) + double(1)\n`);
    writeFileSync(path.join(dir, 'loop-0.lua'), '--- @include "a"\nreturn 1\n');
    writeFileSync(path.join(dir, 'includes', 'a.lua'), '--- @include "b"\n');
    writeFileSync(path.join(dir, 'includes', 'b.lua'), '--- @include "a"\n');
    const { calc } = loadScripts(new URL(`file://${dir}/`), ['calc'] as const);
    assert.equal(calc.body.match(/local function double/g)?.length, 1, 'the shared fragment once');
    assert.ok(!calc.body.includes('@include'), 'every include expanded');
    assert.equal(await calc.run(redis, [], [3]), 14);
    // A cycle is cut where a fragment comes back, so the body stays finite.
    const { loop } = loadScripts(new URL(`file://${dir}/`), ['loop'] as const);
    assert.equal(loop.body.trim(), 'return 1');
    assert.throws(() => loadScripts(new URL(`file://${dir}/`), ['missing'] as const), /no Lua script missing/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
