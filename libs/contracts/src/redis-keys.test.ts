import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pipelineShardCap, redisKeys, REPLY_SHARDS, type ReplySessionKey, type SessionKey } from './redis-keys.js';

/** Redis Cluster's CRC16 (XMODEM) of a key's hash tag, or of the whole key when it has none. */
function keySlot(key: string): number {
  const open = key.indexOf('{');
  let hashed = key;
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) hashed = key.slice(open + 1, close);
  }
  let crc = 0;
  for (const byte of Buffer.from(hashed)) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

const slotsOf = (keys: string[]) => new Set(keys.map(keySlot));

test('the slot function is Redis Cluster\'s', () => {
  // CRC16/XMODEM's check value, and the hash tag rule: only the first non-empty {…} is hashed.
  assert.equal(keySlot('123456789'), 0x31c3 % 16384);
  assert.equal(keySlot('a:{user1000}:x'), keySlot('b:{user1000}:y'));
  assert.equal(keySlot('{}x'), keySlot('{}x'));
  assert.notEqual(keySlot('{}x'), keySlot('{}y'), 'an empty tag hashes the whole key');
});

test('every script\'s keys of one session share a slot, whatever the ids hold', () => {
  for (const shards of [1, 4, 16]) {
    const k = redisKeys('conveyor', { pipelineShards: shards });
    for (const launcherId of ['alice', 'a}b', '{x}', '', 'webchat:person:alice']) {
      const s: SessionKey = { botId: 'bot-1', adapter: 'http-bot', launcherType: 'person', launcherId };
      const lease = [k.sessionQueue(s), k.sessionLease(s), k.pipelineSlots(s), k.sessionFirstSeen(s), k.sessionLastSeen(s), k.sessionFinished(s),
        k.sessionAggregatePending(s), k.sessionAggregateNewest(s), k.sessionAggregateMerged(s, 'q1')];
      assert.equal(slotsOf(lease).size, 1, `session keys of ${JSON.stringify(launcherId)} with ${shards} shard(s)`);
      const window = k.rateLimitWindow(s, `bot-1:pipeline-1:person:${launcherId}`);
      assert.equal(slotsOf([...lease, window, `${window}:q:1700000000000`]).size, 1, 'the chat\'s rate window and its buckets are in the session\'s slot');
    }
    for (const sessionId of ['ticket-1', 'x}y', '{z}']) {
      const r: ReplySessionKey = { botId: 'bot-1', adapter: 'http-bot', sessionId };
      const delivery = [k.reply(r, 'q1'), k.replyAdapterState(r, 'q1'), k.replySessionReplies(r), k.replySessionSender(r), k.replySessionSequence(r),
        k.replyActiveSessions(r), k.replyPrefix(r), `${k.replyPrefix(r)}q2`];
      assert.equal(slotsOf(delivery).size, 1, `delivery keys of ${JSON.stringify(sessionId)}`);
    }
  }
});

test('a run\'s attempt counter and its attempt span share a slot', () => {
  const k = redisKeys('conveyor');
  for (const queryId of ['0b7f3c9e-2f6a-4d7e-9a51-7c1f0f8e2a10', 'q1']) {
    assert.equal(slotsOf([k.runAttempts(queryId), k.runAttemptSpan(queryId)]).size, 1, queryId);
  }
  assert.notEqual(keySlot(k.runAttemptSpan('q1')), keySlot(k.runAttemptSpan('q2')), 'runs spread over the slots');
});

test('sessions spread over the pipeline shards and the delivery shards', () => {
  const k = redisKeys('conveyor', { pipelineShards: 8 });
  const pipelineSlots = new Set<string>();
  const activeSets = new Set<string>();
  for (let i = 0; i < 2_000; i++) {
    pipelineSlots.add(k.pipelineSlots({ botId: 'bot-1', adapter: 'telegram', launcherType: 'group', launcherId: `chat-${i}` }));
    activeSets.add(k.replyActiveSessions({ botId: 'bot-1', adapter: 'telegram', sessionId: `group_chat-${i}` }));
  }
  assert.deepEqual([...pipelineSlots].sort(), [...k.allPipelineSlots()].sort());
  assert.deepEqual([...activeSets].sort(), [...k.allReplyActiveSessions()].sort());
  assert.equal(k.allReplyActiveSessions().length, REPLY_SHARDS);
  // The shards' tags land on different slots, so a cluster can put them on different nodes.
  assert.equal(slotsOf(k.allPipelineSlots()).size, 8);
  assert.ok(slotsOf(k.allReplyActiveSessions()).size >= REPLY_SHARDS - 1);
  // One shard: the single exact cap, every session's slot set the same key.
  const one = redisKeys('conveyor');
  assert.deepEqual(one.allPipelineSlots(), [one.pipelineSlots({ botId: 'b', adapter: 'http-bot', launcherType: 'person', launcherId: 'x' })]);
});

test('the pipeline cap splits over its shards without losing or inventing a slot', () => {
  for (const [cap, shards] of [[20, 1], [20, 3], [7, 7], [100, 16]] as const) {
    const parts = Array.from({ length: shards }, (_, n) => pipelineShardCap(cap, shards, n));
    assert.equal(parts.reduce((a, b) => a + b, 0), cap);
    assert.ok(Math.max(...parts) - Math.min(...parts) <= 1);
    assert.ok(Math.min(...parts) >= 1);
  }
  assert.throws(() => redisKeys('p', { pipelineShards: 0 }), /positive integer/);
});

test('a session key names its pipeline shard back; keys of no shard name none', () => {
  const k = redisKeys('conveyor', { pipelineShards: 8 });
  for (let i = 0; i < 200; i++) {
    const s: SessionKey = { botId: 'bot-1', adapter: 'telegram', launcherType: 'group', launcherId: `chat-${i}` };
    assert.equal(k.pipelineShardOfKey(k.sessionLease(s)), k.pipelineShard(s));
  }
  assert.equal(k.pipelineShardOfKey(k.streamed('q-1')), undefined);
  assert.equal(k.pipelineShardOfKey(k.replySessionSender({ botId: 'b', adapter: 'http-bot', sessionId: 's' })), undefined);
  assert.equal(k.pipelineShardOfKey('other:{p1}:session:{x}:lease'), undefined, 'another prefix');
  assert.equal(redisKeys('conveyor').pipelineShardOfKey(k.pipelineSlots({ botId: 'b', adapter: 'http-bot', launcherType: 'person', launcherId: 'z' })) ?? 0, 0);
});
