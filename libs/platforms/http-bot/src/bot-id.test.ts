import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizeBotId } from './bot-id.js';

const CANON = '5f0c2b7e-3d4a-4e8b-9a61-0c2f7d9e1b34';

test('spellings Python uuid.UUID accepts (vectors from CPython 3.11)', () => {
  const cases: [string, string][] = [
    [CANON, CANON],
    ['5F0C2B7E-3D4A-4E8B-9A61-0C2F7D9E1B34', CANON],
    ['5f0c2b7e3d4a4e8b9a610c2f7d9e1b34', CANON],
    [`{${CANON}}`, CANON],
    [`{{5f0c2b7e3d4a4e8b9a610c2f7d9e1b34}`, CANON],
    [`urn:uuid:${CANON}`, CANON],
    ['+f0c2b7e3d4a4e8b9a610c2f7d9e1b34', '0f0c2b7e-3d4a-4e8b-9a61-0c2f7d9e1b34'],
    [' f0c2b7e3d4a4e8b9a610c2f7d9e1b34', '0f0c2b7e-3d4a-4e8b-9a61-0c2f7d9e1b34'],
    ['0xc2b7e3d4a4e8b9a610c2f7d9e1b34a', '00c2b7e3-d4a4-e8b9-a610-c2f7d9e1b34a'],
    ['5f0c_b7e3d4a4e8b9a610c2f7d9e1b34', '05f0cb7e-3d4a-4e8b-9a61-0c2f7d9e1b34'],
  ];
  for (const [raw, want] of cases) assert.equal(normalizeBotId(raw), want, raw);
});

test('anything else is not a bot id', () => {
  for (const raw of [
    '',
    'not-a-uuid',
    '-f0c2b7e3d4a4e8b9a610c2f7d9e1b34',
    '5f0c2b7e-3d4a-4e8b-9a61-0c2f7d9e1b3',
    '5f0c2b7e3d4a4e8b9a610c2f7d9e1b3g',
    '5f0c2b7e3d4a4e8b9a610c2f7d9e1b34 ',
    '5f0c__7e3d4a4e8b9a610c2f7d9e1b34',
  ])
    assert.equal(normalizeBotId(raw), null, raw);
});
