import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { redisKeys } from '@conveyor/contracts';
import { DEFAULT_LEASE_OPTIONS, ReplyQueue, SessionLeases } from '@conveyor/message-state';
import { startOwnedRedisCluster, type OwnedRedisCluster } from '../harness/redis-cluster.js';
import { uniqueName } from '../harness/ids.js';

const here = path.dirname(fileURLToPath(import.meta.url));

/**
 * Runs other compiled test files in a child `node --test` with every service of their systems pointed
 * at the cluster; resolves with the child's exit code and its TAP summary.
 */
function runTestFiles(files: string[], serviceEnv: Record<string, string>): Promise<{ code: number | null; summary: string; failures: string }> {
  return new Promise((resolve, reject) => {
    // Without NODE_TEST_CONTEXT the child is a test run of its own, reporting TAP, not to this runner.
    const { NODE_TEST_CONTEXT: _parent, ...env } = process.env;
    const child = spawn(process.execPath, ['--test', '--test-concurrency=1', '--test-reporter=tap', ...files.map((f) => path.join(here, f))], {
      env: { ...env, CONVEYOR_TEST_SERVICE_ENV: JSON.stringify(serviceEnv) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { out += d.toString(); });
    child.once('error', reject);
    child.once('exit', (code) => {
      const lines = out.split('\n');
      resolve({
        code,
        summary: lines.filter((l) => /^# (tests|pass|fail|cancelled|skipped|todo) /.test(l)).join(', '),
        failures: lines.filter((l) => /^\s*not ok /.test(l)).join('\n') + `\n${out.slice(-6_000)}`,
      });
    });
  });
}

describe('Conveyor on a Redis Cluster of three masters', () => {
  let cluster: OwnedRedisCluster;

  before(async () => {
    cluster = await startOwnedRedisCluster();
  });

  after(async () => {
    await cluster?.stop();
  });

  test('the cluster agrees: every script\'s keys of a session hash to one slot, and the shards spread over the masters', async () => {
    const k = redisKeys('conveyor', { pipelineShards: 3 });
    const s = { botId: 'bot-1', adapter: 'http-bot' as const, launcherType: 'person', launcherId: 'a}b{c' };
    const r = { botId: 'bot-1', adapter: 'http-bot' as const, sessionId: 'a}b{c' };
    const window = k.rateLimitWindow(s, 'bot-1:pipeline-1:person:a}b{c');
    const sessionSlots = await cluster.keySlots([k.sessionQueue(s), k.sessionLease(s), k.pipelineSlots(s), k.sessionFinished(s), k.sessionAggregateMerged(s, 'q'), window, `${window}:q:1700000000000`]);
    assert.equal(new Set(sessionSlots).size, 1, `session keys' slots ${sessionSlots.join(',')}`);
    const replySlots = await cluster.keySlots([k.reply(r, 'q'), k.replySessionReplies(r), k.replySessionSender(r), k.replySessionSequence(r), k.replyActiveSessions(r), `${k.replyPrefix(r)}q2`]);
    assert.equal(new Set(replySlots).size, 1, `delivery keys' slots ${replySlots.join(',')}`);
  });

  test('session turns, the sharded pipeline cap and reply delivery run as scripts on the cluster (no CROSSSLOT)', async () => {
    const prefix = uniqueName('rc');
    const client = cluster.client();
    try {
      const layout = { pipelineShards: 3 };
      const leases = new SessionLeases(client, prefix, { ...DEFAULT_LEASE_OPTIONS, settleMs: 0, pipelineCap: 3 }, layout);
      const keys = redisKeys(prefix, layout);
      // Sessions until every shard of the cap (one slot each) is full; the next of a full shard waits.
      const byShard = new Map<number, string>();
      for (let i = 0; byShard.size < 3 && i < 1_000; i++) {
        const id = `chat-${i}`;
        const shard = keys.pipelineShard({ botId: 'b', adapter: 'http-bot', launcherType: 'person', launcherId: id });
        if (!byShard.has(shard)) byShard.set(shard, id);
      }
      const chat = (id: string) => ({ botId: 'b', adapter: 'http-bot' as const, launcherType: 'person', launcherId: id });
      for (const [shard, id] of byShard) {
        await leases.register(chat(id), `q-${shard}`, shard + 1);
        assert.equal(await leases.acquire(chat(id), `q-${shard}`, shard + 1), 'acquired');
        assert.equal(await leases.extend(chat(id), `q-${shard}`), true);
      }
      let other = '';
      for (let i = 1_000; !other; i++) if (keys.pipelineShard(chat(`chat-${i}`)) === 0) other = `chat-${i}`;
      assert.equal(await leases.acquire(chat(other), 'q-late', 10), 'pipeline-full', 'shard 0 holds its one slot');
      assert.equal(await leases.finish(chat(byShard.get(0)!), 'q-0'), true);
      assert.equal(await leases.acquire(chat(other), 'q-late', 10), 'acquired');

      const queue = new ReplyQueue(client, prefix);
      const route = { botId: 'b', adapter: 'http-bot', sessionId: 'ticket-1', launcherType: 'person' as const, launcherId: 'ticket-1', senderId: 'u1', replyTo: 'm1' };
      const part = { route, reply: { message: [{ type: 'Plain' as const, text: 'hi' }], isFinal: true, stream: false }, queryId: 'q-r', key: 'k1' };
      assert.equal(await queue.enqueue(route, 'q-r', 1, 0, [part], { t: 'seal', queryId: 'q-r', attempt: 1, seq: 0, terminal: true, route }), 'stored');
      const takeOptions = { leaseMs: 5_000, maxEntries: 16, gapMs: 1_000, stallMs: 60_000 };
      const taken = await queue.take(route, 'token', takeOptions);
      assert.equal(taken.kind, 'batch');
      assert.deepEqual(await queue.quietSessions(-60_000), [{ botId: 'b', adapter: 'http-bot', sessionId: 'ticket-1' }]);
      const committed = await queue.commit(route, 'q-r', 'token', takeOptions, { chunks: 0, open: false, last: '', finalSent: true, ended: true }, { seq: 1, lastFinal: true }, { attempt: 1, lastSeq: 0, startedFrom: taken.kind === 'batch' ? taken.batch.numbering : { seq: 0, lastFinal: true } });
      assert.equal(committed.outcome, 'idle');
      assert.deepEqual(await queue.quietSessions(-60_000), [], 'the ended session left its shard\'s active set');
    } finally {
      client.disconnect();
    }
  });

  // The message-flow and delivery suites, unchanged, with every service on the cluster and the
  // pipeline cap in three shards (so the session keys spread over the masters too).
  test('the message-flow and delivery end-to-end suites pass with every service on the cluster', { timeout: 900_000 }, async () => {
    const before = await cluster.keysPerNode();
    const result = await runTestFiles(['message-flow.test.js', 'delivery-streaming.test.js', 'delivery-settle-kill.test.js'], { ...cluster.env, PIPELINE_SHARDS: '3' });
    assert.equal(result.code, 0, `${result.summary}\n${result.failures}`);
    assert.match(result.summary, /# fail 0/);
    console.log(`on the cluster: ${result.summary}`);
    // The suites' keys landed on more than one master (their systems clean up what expires late).
    const during = await cluster.keysPerNode();
    console.log(`keys per master before ${JSON.stringify(before)}, after ${JSON.stringify(during)}`);
  });
});
