import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AdminApi } from '@conveyor/contracts';
import { useTempDatabase } from '@conveyor/persistence/testing';
import { ConfigReadModel } from './read-model.js';
import { InstanceSettingsSource } from './instance-settings.js';

const database = useTempDatabase();
const defaults = { commandEnable: true, commandPrefix: ['!'], banWords: { mask: '*', maskWord: '', words: [] } };

test('kept until a settings event or a reset drops it; other kinds leave it', async () => {
  const { prisma } = database();
  const config = new ConfigReadModel(prisma);
  const errors: string[] = [];
  const source = new InstanceSettingsSource({ config, logger: { error: (_o, msg) => void errors.push(msg) } }, defaults);
  assert.deepEqual((await source.current()).commandPrefixes, ['!'], 'no row: the defaults');

  const id = AdminApi.INSTANCE_SETTINGS_ID;
  await prisma.instanceSettings.create({ data: { id, values: { command: { enable: null, prefix: ['#'] }, banWords: null } } });
  config.invalidate({ version: 1, kind: 'bot', id: 'b1', revision: 2 });
  assert.deepEqual((await source.current()).commandPrefixes, ['!'], 'another kind keeps the cached settings');
  config.invalidate({ version: 1, kind: 'settings', id, revision: 2 });
  assert.deepEqual((await source.current()).commandPrefixes, ['#']);

  await prisma.instanceSettings.update({ where: { id }, data: { values: { command: { prefix: 'not a list' } } } });
  config.invalidate(undefined);
  assert.deepEqual((await source.current()).commandPrefixes, ['!'], 'an unreadable row: the defaults');
  assert.equal(errors.length, 1, 'and a log line saying so');
  assert.deepEqual((await source.current()).commandPrefixes, ['!']);
  assert.equal(errors.length, 1, 'once per read of the row, not once per message');
});
