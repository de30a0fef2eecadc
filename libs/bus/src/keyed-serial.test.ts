import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { KeyedSerial } from './keyed-serial.js';

test('tasks of one key run one at a time in submission order; other keys run alongside', async () => {
  const serial = new KeyedSerial();
  const log: string[] = [];
  const task = (name: string, ms: number) => async () => {
    log.push(`start ${name}`);
    await sleep(ms);
    log.push(`end ${name}`);
    return name;
  };
  const results = await Promise.all([serial.run('a', task('a1', 30)), serial.run('a', task('a2', 1)), serial.run('b', task('b1', 5))]);
  assert.deepEqual(results, ['a1', 'a2', 'b1']);
  assert.ok(log.indexOf('end a1') < log.indexOf('start a2'), 'a2 waits for a1');
  assert.ok(log.indexOf('end b1') < log.indexOf('end a1'), 'b1 does not wait for a1');
  assert.equal(serial.pendingKeys, 0);
});

test('a failing task does not stop the next task of its key', async () => {
  const serial = new KeyedSerial();
  const first = serial.run('k', async () => {
    throw new Error('boom');
  });
  const second = serial.run('k', async () => 'ran');
  await assert.rejects(first, /boom/);
  assert.equal(await second, 'ran');
});
