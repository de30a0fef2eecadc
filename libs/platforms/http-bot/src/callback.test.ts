import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { MessageComponent } from '@conveyor/contracts';
import {
  callbackBody,
  componentToWire,
  isFinalForChunk,
  naiveLocalIsoTimestamp,
} from './callback.js';
import { sign } from './verify.js';
import { syncOkBody } from './responses.js';

// The example vectors were stamped by a server at UTC+8; Node re-reads TZ when it is assigned.
process.env.TZ = 'Asia/Shanghai';

const OUTBOUND = 'example-outbound-secret';
const REPLY_TO = 'in_3f2b8c1d9e7a4b6c8d0e1f2a3b4c5d6e';
const plain = (text: string): MessageComponent => ({ type: 'Plain', text });

/** The time LangBot stamped, as epoch seconds plus microseconds. */
function at(epochSeconds: number, microsecond: number) {
  return { timestamp: new Date(epochSeconds * 1000 + Math.floor(microsecond / 1000)), microsecond };
}

function check(body: string, ts: string, sigHex: string) {
  assert.equal(sign(OUTBOUND, ts, Buffer.from(body, 'utf8')), `sha256=${sigHex}`);
}

test('the protocol\'s example whole reply, byte for byte', () => {
  const body = callbackBody({
    sessionId: 'ticket-10293',
    replyTo: REPLY_TO,
    sequence: 1,
    isFinal: true,
    stream: false,
    message: [plain('Please clear the export cache and try again.')],
    ...at(1767225603, 512337),
  });
  assert.equal(
    body,
    '{"session_id": "ticket-10293", "reply_to": "in_3f2b8c1d9e7a4b6c8d0e1f2a3b4c5d6e", "sequence": 1, "is_final": true, "stream": false, "message": [{"type": "Plain", "text": "Please clear the export cache and try again."}], "timestamp": "2026-01-01T08:00:03.512337"}',
  );
  assert.equal(Buffer.byteLength(body), 262);
  check(body, '1767225603', 'd1953775e1fa02d9519c512f8b48dd355d222fc8202ad644ba83049ebc8315da');
});

test('the protocol\'s example streamed reply with a tool round', () => {
  const parts = [
    { text: 'Let me check', modelFinal: false, tools: false, ts: 1767225601, us: 104211, sig: '04080a2f01dc729ac67eaab8854cc02b2e46f824423c7566a1dece8db75f2ae4' },
    { text: 'Let me check the order system.', modelFinal: true, tools: true, ts: 1767225601, us: 398020, sig: '84c2d1b5702125b433a981965baa61b67fde31f89131b3e644267f020174a768' },
    { text: 'Order 42 shipped', modelFinal: false, tools: false, ts: 1767225604, us: 870553, sig: '9f5bf9397cd863648723a9b3fc7d86f419c9c7c5c6bf4d2135909d3cccc8e591' },
    { text: 'Order 42 shipped yesterday and should arrive on Friday.', modelFinal: true, tools: false, ts: 1767225605, us: 233918, sig: '40873e25b37387e67fe152ecd6659086538c61fd90720b8e16e03db0eaeaa613' },
  ];
  const finals: boolean[] = [];
  parts.forEach((p, i) => {
    const isFinal = isFinalForChunk(p.modelFinal, p.tools);
    finals.push(isFinal);
    const sequence = i + 1;
    const body = callbackBody({ sessionId: 'ticket-10293', replyTo: REPLY_TO, sequence, isFinal, stream: true, message: [plain(p.text)], ...at(p.ts, p.us) });
    check(body, String(p.ts), p.sig);
  });
  assert.deepEqual(finals, [false, false, false, true]);
});

test('the protocol\'s example notices: raw UTF-8 body, and a non-final notice mid-stream', () => {
  const a = callbackBody({
    sessionId: 'ticket-10293',
    replyTo: 'in_9a8b7c6d5e4f40312a1b2c3d4e5f6a7b',
    sequence: 1,
    isFinal: true,
    stream: false,
    message: [plain('请求数超过限速器设定值，已丢弃本消息。')],
    ...at(1767225660, 4512),
  });
  assert.equal(Buffer.byteLength(a), 275);
  check(a, '1767225660', '6fc923ce03d4c1dad1785c7f8862e61b05b6033b9cdcfbe8811fbe729698f758');
  const b = callbackBody({ sessionId: 'ticket-10293', replyTo: REPLY_TO, sequence: 3, isFinal: false, stream: true, message: [plain('Request failed.')], ...at(1767225609, 771002) });
  check(b, '1767225609', 'd0eb30b55d8a18ad4bb8546e32e8bdff6e111b53ba8e8a9f2a8cdc74d8467428');
});

test('the protocol\'s example group reply with the At prefix and its default display', () => {
  const body = callbackBody({
    sessionId: 'room-7',
    replyTo: 'in_0b1c2d3e4f5a46789abcdef012345678',
    sequence: 1,
    isFinal: true,
    stream: false,
    message: [{ type: 'At', target: 'user-5567', display: '' }, plain('Hi Alice!')],
    ...at(1767225720, 120034),
  });
  check(body, '1767225720', 'fbcc32bf038d784cf8eccfe299d95ea846ef8f04db93621763c5d6e4a205d1c1');
});

test('naive local timestamp: millisecond Dates, zero fraction omitted', () => {
  assert.equal(naiveLocalIsoTimestamp(new Date(1767225603512)), '2026-01-01T08:00:03.512000');
  assert.equal(naiveLocalIsoTimestamp(new Date(1767225603000)), '2026-01-01T08:00:03');
  assert.equal(naiveLocalIsoTimestamp(new Date(1767225603000), 7), '2026-01-01T08:00:03.000007');
});

test('components carry every field in SDK order', () => {
  const rendered = [
    { type: 'AtAll' },
    { type: 'Image', image_id: '', url: 'u', path: '', base64: 'b' },
    { type: 'Voice', voice_id: '', url: '', path: '', base64: 'v', length: 0 },
    { type: 'File', id: '', name: 'n', size: 0, url: 'u', path: '', base64: 'b' },
    { type: 'Quote', id: null, group_id: null, sender_id: 5, target_id: null, origin: [plain('o')] },
    {
      type: 'Forward',
      display: { title: 't', brief: '', source: '', preview: ['p'], summary: '' },
      node_list: [{ sender_id: 'http_bot', sender_name: '', message_chain: [plain('x')], message_id: 0 }],
    },
    { type: 'Source', id: 'in_x', timestamp: 1767225600 },
    { type: 'Unknown', text: '?' },
  ] as MessageComponent[];
  const keys = rendered.map((c) => Object.keys(componentToWire(c)).join(','));
  assert.deepEqual(keys, [
    'type',
    'type,image_id,url,path,base64',
    'type,voice_id,url,path,base64,length',
    'type,id,name,size,url,path,base64',
    'type,id,group_id,sender_id,target_id,origin',
    'type,display,node_list',
    'type,id,timestamp',
    'type,text',
  ]);
  const fwd = componentToWire(rendered[5]) as { display: object; node_list: object[] };
  assert.deepEqual(Object.keys(fwd.display), ['title', 'brief', 'source', 'preview', 'summary']);
  assert.deepEqual(Object.keys(fwd.node_list[0]), ['sender_id', 'sender_name', 'message_chain', 'message_id']);
  // Defaults are filled in even when a producer left them out.
  assert.deepEqual(componentToWire({ type: 'At', target: 7 } as MessageComponent), { type: 'At', target: 7, display: '' });
});

test('escaping in a callback body follows Python', () => {
  const body = callbackBody({ sessionId: 's"1', replyTo: '', sequence: 1, isFinal: true, stream: false, message: [plain('a\nb\\c\u0001é')], timestamp: new Date(0) });
  assert.ok(body.includes('"session_id": "s\\"1"'));
  assert.ok(body.includes('"text": "a\\nb\\\\c\\u0001é"'));
});

test('isFinalForChunk', () => {
  assert.equal(isFinalForChunk(true, false), true);
  assert.equal(isFinalForChunk(true, true), false);
  assert.equal(isFinalForChunk(false, false), false);
  assert.equal(isFinalForChunk(false, true), false);
});

test('sync body renders components like callbacks', () => {
  assert.deepEqual(syncOkBody('s', 'in_1', [plain('Hel'), { type: 'At', target: 1, display: '' }]), {
    code: 0,
    msg: 'ok',
    data: { session_id: 's', reply_to: 'in_1', message: [plain('Hel'), { type: 'At', target: 1, display: '' }] },
  });
});
