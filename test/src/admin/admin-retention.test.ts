import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import pg from 'pg';
import { DeadLetters } from '@conveyor/admin';
import { DeadLetter } from '@conveyor/contracts';
import { NATS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import type { RunningService } from '../harness/services.js';
import { sample } from '../harness/metrics.js';
import { waitUntil } from '../harness/wait.js';
import { startAdmin } from './admin-support.js';

/** The admin service prunes by age on its schedule, counts it in its metrics, and dead letters by stream time. */
describe('retention in the admin service', () => {
  let sys: TestSystem;
  let admin: RunningService;
  let nc: NatsConnection;
  let db: pg.Client;
  const bot = `retention-${randomUUID()}`;

  before(async () => {
    sys = await startTestSystem({ startServices: false });
    db = new pg.Client({ connectionString: sys.db.url });
    await db.connect();
    nc = await connect({ servers: NATS_URL });
  });

  after(async () => {
    await db?.end();
    await nc?.close();
    await sys?.stop();
  });

  test('old query records and audit entries go, young ones stay; the run is counted per kind', async () => {
    await db.query(
      `INSERT INTO "QueryRecord" ("id", "botId", "launcherType", "launcherId", "status", "receivedAt")
       SELECT gen_random_uuid()::text, $1, 'person', 'u', 'succeeded', now() - make_interval(days => d) FROM unnest(ARRAY[40, 40, 40, 2]) d`,
      [bot],
    );
    await db.query(`INSERT INTO "AuditEntry" ("at", "actor", "resource", "resourceId", "action") VALUES (now() - interval '400 days', 'admin', 'model', $1, 'update')`, [bot]);
    // A short schedule: the first run comes after one interval (at most a minute).
    admin = await startAdmin(sys, { RETENTION_INTERVAL_MINUTES: '0.02', RETENTION_BATCH_SIZE: '2', RETENTION_BATCH_PAUSE_MS: '0' });
    // A run prunes one kind after the other, so the audit entry goes some batches after the query records.
    const count = async (table: 'QueryRecord' | 'AuditEntry', column: 'botId' | 'resourceId') =>
      (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${table}" WHERE "${column}" = $1`, [bot])).rows[0].n;
    await waitUntil('the old rows to be pruned', async () => await count('QueryRecord', 'botId') === 1 && await count('AuditEntry', 'resourceId') === 0, 60_000, 250);
    // The young query record outlives the runs that pruned the old ones.
    assert.equal(await count('QueryRecord', 'botId'), 1);
    const metrics = await waitUntil('the pruned rows in the metrics', async () => {
      const text = await (await fetch(`${admin.url}/metrics`)).text();
      return (sample(text, 'conveyor_retention_pruned_total', { kind: 'query' }) ?? 0) >= 3 ? text : undefined;
    }, 30_000, 250);
    assert.ok((sample(metrics, 'conveyor_retention_pruned_total', { kind: 'audit' }) ?? 0) >= 1);
  });

  test('dead letters stored before the cutoff are deleted oldest first, in batches; younger ones stay', async () => {
    const js = jetstream(nc);
    const subject = sys.topology.subjects.deadLetter('orchestrator');
    const publish = (n: number) => js.publish(subject, JSON.stringify(DeadLetter.parse({
      v: 1, source: 'orchestrator', stream: sys.topology.streams.queries.name, subject: sys.topology.subjects.query(bot), deliveryCount: 5,
      reason: 'max_deliver', error: `old ${n}`, payloadBase64: '', payloadTruncated: false, failedAt: new Date().toISOString(),
    })));
    for (let i = 0; i < 3; i++) await publish(i);
    // The cutoff lies after the three, in the stream's own clock.
    const jsm = await jetstreamManager(nc);
    const last = await jsm.streams.getMessage(sys.topology.streams.deadLetters.name, { last_by_subj: subject });
    const cutoff = new Date(last!.time.getTime() + 1);
    await waitUntil('the clock to pass the cutoff', () => Date.now() > cutoff.getTime() + 5, 5_000, 5);
    await publish(3);
    const deadLetters = new DeadLetters(js, jsm, sys.topology.streams.deadLetters);
    assert.equal(await deadLetters.pruneOlderThan(cutoff, 2), 2);
    assert.equal(await deadLetters.pruneOlderThan(cutoff, 2), 1);
    assert.equal(await deadLetters.pruneOlderThan(cutoff, 2), 0);
    const left = await deadLetters.list({ limit: 10 });
    assert.deepEqual(left.items.map((d) => d.error), ['old 3']);
  });
});
