import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { AdapterName } from '@conveyor/contracts';
import type { Platform } from '@conveyor/platform-kit';
import { platforms } from './index.js';
import { PlatformRegistry } from './registry.js';

const fake = (name: string, configurable = true): Platform => ({
  name, configurable, streamsByDefault: false, botConfigSchema: z.object({}),
  outbound: () => ({ name, deliver: async () => ({ delivered: true }) }),
});

test('every registered platform has a valid adapter name', () => {
  const names = platforms.all().map((p) => p.name);
  assert.deepEqual([...names].sort(), ['dingtalk', 'discord', 'http-bot', 'kook', 'lark', 'line', 'matrix', 'officialaccount', 'onebot', 'qqofficial', 'satori', 'slack', 'telegram', 'webchat', 'wecom', 'wecombot', 'wecomcs']);
  for (const name of names) assert.equal(AdapterName.safeParse(name).success, true, name);
  assert.deepEqual([...platforms.configurableNames()].sort(), ['dingtalk', 'discord', 'http-bot', 'kook', 'lark', 'line', 'matrix', 'officialaccount', 'onebot', 'qqofficial', 'satori', 'slack', 'telegram', 'wecom', 'wecombot', 'wecomcs'], 'the web chat is no bot\'s own platform');
});

test('a name registered twice or not shaped like an adapter name is refused', () => {
  assert.throws(() => new PlatformRegistry([fake('dup'), fake('dup')]), /registered twice/);
  assert.throws(() => new PlatformRegistry([fake('Not Valid')]), /not a valid adapter name/);
  const r = new PlatformRegistry([fake('a'), fake('b', false)]);
  assert.equal(r.get('a')?.name, 'a');
  assert.equal(r.get('nope'), undefined);
  assert.deepEqual(r.configurableNames(), ['a']);
});
