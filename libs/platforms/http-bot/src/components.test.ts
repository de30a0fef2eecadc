import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LIMITS, MessageChainSchema } from '@conveyor/contracts';
import { ChainParseError, parseMessageChain } from './components.js';

test('registered components get their defaults and lose extra fields', () => {
  const chain = parseMessageChain([
    { type: 'Plain', text: 'hi', extra: 1 },
    { type: 'At', target: 42 },
    { type: 'At', target: 'http_bot', display: 'bot' },
    { type: 'AtAll' },
    { type: 'Image', url: 'https://x/y.png' },
    { type: 'Voice', base64: 'data:audio/wav;base64,AA==', length: '12' },
    { type: 'File', name: 'a.txt', size: 3 },
    { type: 'Unknown' },
  ]);
  assert.deepEqual(chain, [
    { type: 'Plain', text: 'hi' },
    { type: 'At', target: 42, display: '' },
    { type: 'At', target: 'http_bot', display: 'bot' },
    { type: 'AtAll' },
    { type: 'Image', image_id: '', url: 'https://x/y.png', path: '', base64: '' },
    { type: 'Voice', voice_id: '', url: '', path: '', base64: 'data:audio/wav;base64,AA==', length: 12 },
    { type: 'File', id: '', name: 'a.txt', size: 3, url: '', path: '', base64: '' },
    { type: 'Unknown', text: '' },
  ]);
  assert.ok(MessageChainSchema.safeParse(chain).success);
});

test('caller-supplied server paths are dropped', () => {
  const chain = parseMessageChain([
    { type: 'Image', path: '/etc/passwd' },
    { type: 'Voice', path: '/etc/shadow' },
    { type: 'File', path: '/root/.ssh/id_rsa' },
  ]);
  for (const c of chain) assert.equal((c as { path: string }).path, '');
});

test('unregistered types and malformed elements become Unknown', () => {
  const chain = parseMessageChain([
    { type: 'Face', id: 1 },
    { type: 'Markdown', text: '# x' },
    { type: 'WeChatEmoji', emoji_md5: 'x' },
    'hello',
    7,
    null,
    ['a', 1.5],
    { text: 'no type', n: true },
  ]);
  assert.deepEqual(chain, [
    { type: 'Unknown', text: 'Unknown component type: Face' },
    { type: 'Unknown', text: 'Unknown component type: Markdown' },
    { type: 'Unknown', text: 'Unknown component type: WeChatEmoji' },
    { type: 'Unknown', text: "Invalid component data: 'hello'" },
    { type: 'Unknown', text: 'Invalid component data: 7' },
    { type: 'Unknown', text: 'Invalid component data: None' },
    { type: 'Unknown', text: "Invalid component data: ['a', 1.5]" },
    { type: 'Unknown', text: "Invalid component data: {'text': 'no type', 'n': True}" },
  ]);
});

test('a registered type failing validation rejects the whole chain', () => {
  const bad: unknown[] = [
    { type: 'Plain' },
    { type: 'Plain', text: 5 },
    { type: 'At' },
    { type: 'At', target: 1.5 },
    { type: 'Voice', length: 'long' },
    { type: 'File', size: null },
    { type: 'Image', path: 3 },
    { type: 'Quote', id: 1 },
    { type: 'Quote', origin: 'x' },
    { type: 'Source', id: 'x' },
    { type: 'Forward', node_list: [{ sender_name: 'a' }] },
  ];
  for (const el of bad) assert.throws(() => parseMessageChain([el]), ChainParseError, JSON.stringify(el));
  assert.throws(() => parseMessageChain([{ type: 'Plain' }]), /1 validation error for Plain\ntext\n {2}Field required/);
});

test('Quote and Forward parse their nested chains with the same rules', () => {
  const [quote, forward] = parseMessageChain([
    { type: 'Quote', id: 9, sender_id: 'u1', origin: [{ type: 'Plain', text: 'old' }, { type: 'Face' }] },
    {
      type: 'Forward',
      display: { title: 'T' },
      node_list: [{ sender_id: 'http_bot', message_chain: [{ type: 'Plain', text: 'n1' }] }],
    },
  ]);
  assert.deepEqual(quote, {
    type: 'Quote',
    id: 9,
    group_id: null,
    sender_id: 'u1',
    target_id: null,
    origin: [
      { type: 'Plain', text: 'old' },
      { type: 'Unknown', text: 'Unknown component type: Face' },
    ],
  });
  assert.deepEqual(forward, {
    type: 'Forward',
    display: { title: 'T', brief: '', source: '', preview: [], summary: '' },
    node_list: [{ sender_id: 'http_bot', sender_name: '', message_chain: [{ type: 'Plain', text: 'n1' }], message_id: 0 }],
  });
  assert.throws(() => parseMessageChain([{ type: 'Quote', origin: [{ type: 'Plain' }] }]), ChainParseError);
});

test('Source accepts Unix seconds and keeps them as timestamp', () => {
  assert.deepEqual(parseMessageChain([{ type: 'Source', id: 'm1', time: 1767225600.7 }]), [
    { type: 'Source', id: 'm1', timestamp: 1767225600 },
  ]);
});

test('non-arrays, oversize chains and runaway nesting are refused', () => {
  assert.throws(() => parseMessageChain('hi'), /Input should be a valid list/);
  assert.throws(() => parseMessageChain({}), ChainParseError);
  assert.equal(parseMessageChain([]).length, 0);
  assert.throws(() => parseMessageChain(new Array(LIMITS.messageChainComponents + 1).fill({ type: 'AtAll' })), ChainParseError);
  let nested: unknown = { type: 'Plain', text: 'x' };
  for (let i = 0; i < 100; i++) nested = { type: 'Quote', origin: [nested] };
  assert.throws(() => parseMessageChain([nested]), ChainParseError);
  let deepList: unknown = [];
  for (let i = 0; i < 1000; i++) deepList = [deepList];
  assert.throws(() => parseMessageChain([deepList]), ChainParseError);
});

test('integers past 2^53 are kept as the digits Python reads, or refused where a number is needed; every result fits the bus schema', () => {
  const [at, quote] = parseMessageChain([
    { type: 'At', target: 2.7001288170896956e76 },
    { type: 'Quote', id: 1, sender_id: -1e300, origin: [{ type: 'Plain', text: 'q' }] },
  ]);
  assert.deepEqual(at, { type: 'At', target: BigInt(2.7001288170896956e76).toString(), display: '' });
  assert.equal((quote as { sender_id: unknown }).sender_id, BigInt(-1e300).toString());
  assert.equal(MessageChainSchema.safeParse([at, quote]).success, true);
  assert.throws(() => parseMessageChain([{ type: 'Voice', length: 1e20 }]), /valid integer between/);
  assert.throws(() => parseMessageChain([{ type: 'Source', id: 'm', time: 1e308 }]), /valid datetime/);
  assert.throws(() => parseMessageChain([{ type: 'Source', id: 'm', time: '99999999999999999' }]), /valid datetime/);
});
