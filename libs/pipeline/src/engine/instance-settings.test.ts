import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AdminApi } from '@conveyor/contracts';
import { effectiveInstanceSettings, type InstanceDefaults } from './instance-settings.js';

const defaults: InstanceDefaults = { commandEnable: true, commandPrefix: ['!', '！'], banWords: { mask: '*', maskWord: '', words: ['fromfile'] } };

test('nothing stored: the deployment defaults', () => {
  assert.deepEqual(effectiveInstanceSettings(AdminApi.InstanceSettingsValues.parse({}), defaults), { commandPrefixes: ['!', '！'], commandAdmins: new Set(), banWords: defaults.banWords });
});

test('a stored value wins, each value on its own', () => {
  const prefixOnly = AdminApi.InstanceSettingsValues.parse({ command: { prefix: ['#'] } });
  assert.deepEqual(effectiveInstanceSettings(prefixOnly, defaults).commandPrefixes, ['#']);
  assert.deepEqual(effectiveInstanceSettings(prefixOnly, { ...defaults, commandEnable: false }).commandPrefixes, [], 'the env still switches commands off');
  const off = AdminApi.InstanceSettingsValues.parse({ command: { enable: false } });
  assert.deepEqual(effectiveInstanceSettings(off, defaults).commandPrefixes, []);
  const words = AdminApi.InstanceSettingsValues.parse({ banWords: { words: ['bad'], mask_word: '[x]' } });
  assert.deepEqual(effectiveInstanceSettings(words, defaults).banWords, { mask: '*', maskWord: '[x]', words: ['bad'] });
  const admins = AdminApi.InstanceSettingsValues.parse({ command: { admins: ['person:boss', 'group:ops'] } });
  assert.deepEqual(effectiveInstanceSettings(admins, defaults).commandAdmins, new Set(['person:boss', 'group:ops']));
  assert.equal(AdminApi.InstanceSettingsValues.safeParse({ command: { admins: ['boss'] } }).success, false, 'a chat names its kind');
});

test('the API refuses a word that is not a regular expression, naming it', () => {
  const parsed = AdminApi.InstanceSettingsUpdate.safeParse({ banWords: { words: ['ok', '(unclosed'] } });
  assert.equal(parsed.success, false);
  assert.deepEqual(parsed.error?.issues[0].path, ['banWords', 'words', 1]);
});
