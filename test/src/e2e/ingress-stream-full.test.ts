import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { NATS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { uniqueName } from '../harness/ids.js';

/**
 * The queries stream refuses publishes when it is full (`discard: new`): the caller must hear LangBot's
 * 503 (come back later), not a 500, and the refusal is decided by the broker's error code.
 */
describe('a full queries stream', () => {
  let sys: TestSystem;
  let nc: NatsConnection;

  before(async () => {
    sys = await startTestSystem({ startServices: false });
    await sys.services.start('ingress');
    nc = await connect({ servers: NATS_URL });
  });

  after(async () => {
    await nc?.close();
    await sys?.stop();
  });

  test('answers 503 with LangBot\'s overload body', async () => {
    const jsm = await jetstreamManager(nc);
    const name = sys.topology.streams.queries.name;
    const info = await jsm.streams.info(name);
    // Nothing consumes the stream here: one message fills it.
    await jsm.streams.update(name, { ...info.config, max_msgs: 1 });
    const post = (text: string) => sys.post({ session_id: uniqueName('full'), message: [{ type: 'Plain', text }] });
    assert.equal((await post('fits')).status, 202);
    const refused = await post('does not fit');
    const body = (await refused.json()) as { code: number; msg: string };
    assert.equal(refused.status, 503, JSON.stringify(body));
    assert.equal(body.code, 50301);
  });
});
