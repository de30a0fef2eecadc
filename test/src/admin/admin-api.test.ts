import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { buildDeadLetter } from '@conveyor/bus';
import { LIMITS } from '@conveyor/contracts';
import { createPrismaClient, type PrismaClient } from '@conveyor/persistence';
import { NATS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import type { RunningService } from '../harness/services.js';
import { AdminClient, ConfigEvents, startAdmin } from './admin-support.js';

/** The fake model's key in the test system (startTestSystem). */
const LLM_KEY = 'e2e-llm-key';

/** The admin API against real Postgres and NATS: sign-in, roles, CRUD with versions, secrets, audit, events. */
describe('admin API', () => {
  let sys: TestSystem;
  let admin: RunningService;
  let prisma: PrismaClient;
  let events: ConfigEvents;
  let api: AdminClient;

  before(async () => {
    sys = await startTestSystem({ startServices: false });
    admin = await startAdmin(sys);
    prisma = createPrismaClient(sys.db.url);
    events = await ConfigEvents.open(sys);
    api = new AdminClient(admin.url);
    await api.login();
  });
  after(async () => {
    await events?.close();
    await prisma?.$disconnect();
    await sys?.stop();
  });

  test('without a session or token every API route is 401; a wrong password is 401; the status route is open', async () => {
    const anonymous = new AdminClient(admin.url);
    const refused = await anonymous.call('GET', '/models');
    assert.equal(refused.status, 401);
    assert.equal(refused.body.code, 'unauthenticated');
    assert.equal(refused.body.field, 'header.authorization');
    assert.equal((await anonymous.call('GET', '/models', undefined, { authorization: 'Bearer cvt_not-a-token' })).status, 401);
    const wrong = await anonymous.call('POST', '/auth/login', { username: 'admin', password: 'not the password' });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body.field, 'body.password');
    assert.deepEqual((await anonymous.call('GET', '/auth/status')).body, { setupRequired: false });
    assert.equal((await fetch(`${admin.url}/health/live`)).status, 200, 'probes need no sign-in');
    assert.ok(!admin.logs.join('\n').includes('correct horse battery staple'), 'the password is never logged');
  });

  test('guessing is bounded: after 10 failed sign-ins a user name gets 429 with Retry-After, even with the right password', async () => {
    const client = new AdminClient(admin.url);
    await api.call('POST', '/users', { username: 'guessed', password: 'the real password', role: 'viewer' });
    for (let i = 0; i < 10; i++) assert.equal((await client.call('POST', '/auth/login', { username: 'guessed', password: `guess ${i}` })).status, 401);
    const locked = await client.call('POST', '/auth/login', { username: 'guessed', password: 'the real password' });
    assert.equal(locked.status, 429);
    assert.equal(locked.body.code, 'rate_limited');
    assert.ok(Number(locked.headers.get('retry-after')) > 0);
  });

  test('the session cookie is HTTP-only and SameSite=Lax, and names the signed-in user', async () => {
    const client = new AdminClient(admin.url);
    const login = await client.login();
    assert.match(login.headers.get('set-cookie') ?? '', /HttpOnly/i);
    assert.match(login.headers.get('set-cookie') ?? '', /SameSite=Lax/i);
    assert.deepEqual((await client.call('GET', '/auth/me')).body, { username: 'admin', role: 'admin', via: 'session' });
    assert.equal((await client.call('POST', '/auth/logout')).status, 204);
  });

  test('a bad body is 400 naming the field; an invalid pipeline config names its key path', async () => {
    const model = await api.call('POST', '/models', { id: 'm-bad', baseUrl: 'ftp://x', model: 'x' });
    assert.equal(model.status, 400);
    assert.equal(model.body.code, 'validation_failed');
    assert.equal(model.body.field, 'body.baseUrl');
    const pipeline = await api.call('POST', '/pipelines', { id: 'p-bad', config: { ai: { runner: { runner: 'ollama-runner' } } } });
    assert.equal(pipeline.status, 400);
    assert.equal(pipeline.body.field, 'body.config.ai.runner.runner');
    const checked = await api.call('POST', '/pipelines/validate', { config: { ai: { 'local-agent': { model: 'no-such-model' } } } });
    assert.equal(checked.status, 200);
    assert.equal(checked.body.valid, false);
    assert.deepEqual(checked.body.issues.map((i: { path: string }) => i.path), ['config.ai.local-agent.model']);
    const nul = await api.call('GET', '/bots/a%00b');
    assert.equal(nul.status, 404, 'an id Postgres cannot store is simply unknown');
    assert.equal(nul.body.field, 'path.id');
    const notJson = await api.call('POST', '/models', '{not json');
    assert.equal(notJson.status, 400);
    assert.equal(notJson.body.field, 'body');
  });

  test('a model key is stored encrypted and never returned; writes need the current version (409 when stale, 428 when absent)', async () => {
    const created = await api.call('POST', '/models', { id: 'm1', baseUrl: sys.llm.url, model: 'fake-model', apiKey: LLM_KEY });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.version, 1);
    assert.equal(created.body.managedBy, 'console');
    assert.equal(created.body.apiKey.source, 'encrypted');
    assert.ok(!JSON.stringify(created.body).includes(LLM_KEY));
    const row = await prisma.llmModel.findUniqueOrThrow({ where: { id: 'm1' } });
    assert.match(row.apiKeyRef, /^enc:v1:[0-9a-f]+:/);
    assert.ok(!row.apiKeyRef.includes(LLM_KEY));
    await events.waitFor('model', 'm1', 1);

    const updated = await api.call('PATCH', '/models/m1', { name: 'Model one' }, { 'if-match': '"1"' });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.equal(updated.body.version, 2);
    await events.waitFor('model', 'm1', 2);

    const stale = await api.call('PATCH', '/models/m1', { name: 'lost update', version: 1 });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.code, 'version_conflict');
    assert.equal(stale.body.currentVersion, 2);
    assert.equal((await prisma.llmModel.findUniqueOrThrow({ where: { id: 'm1' } })).name, 'Model one', 'a stale write changes nothing');
    const unconditional = await api.call('PATCH', '/models/m1', { name: 'blind write' });
    assert.equal(unconditional.status, 428);
    assert.equal(unconditional.body.field, 'header.if-match');

    const tested = await api.call('POST', '/models/m1/test');
    assert.equal(tested.status, 200);
    assert.equal(tested.body.ok, true, JSON.stringify(tested.body));
    assert.equal(typeof tested.body.latencyMs, 'number');
        assert.ok(!admin.logs.join('\n').includes(LLM_KEY), 'the key is never logged');

    assert.equal((await api.call('DELETE', '/models/m1', undefined, { 'if-match': '2' })).status, 204);
    assert.equal((await api.call('GET', '/models/m1')).status, 404);
    await events.waitFor('model', 'm1', 0);
  });

  test('pipelines: create, copy, and a pipeline a bot uses cannot be deleted', async () => {
    const created = await api.call('POST', '/pipelines', { id: 'p1', config: { ai: { 'local-agent': { model: { primary: 'fake', fallbacks: [] } } } } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.config.output['long-text-processing'].threshold, 1000, 'LangBot defaults filled in');
    const copy = await api.call('POST', '/pipelines/p1/copy', { id: 'p1-copy' });
    assert.equal(copy.status, 201);
    assert.deepEqual(copy.body.config, created.body.config);
    const inUse = await api.call('DELETE', '/pipelines/default', undefined, { 'if-match': '1' });
    assert.equal(inUse.status, 409);
    assert.equal(inUse.body.code, 'conflict');
    assert.equal((await api.call('DELETE', '/pipelines/p1-copy', { version: 1 })).status, 204);
  });

  test('bot secrets come back masked; sending the mask back keeps the secret; enable and disable are versioned writes', async () => {
    const created = await api.call('POST', '/bots', { name: 'console bot', adapter: 'http-bot', pipelineId: 'default', adapterConfig: { inbound_secret: 'inbound-secret-abcdefgh', callback_url: 'http://127.0.0.1:9/cb' } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id: string = created.body.id;
    assert.equal(created.body.adapterConfig.inbound_secret, '••••efgh');
    assert.equal(created.body.adapterConfig.callback_url, 'http://127.0.0.1:9/cb');
    const renamed = await api.call('PATCH', `/bots/${id}`, { name: 'renamed', adapterConfig: created.body.adapterConfig, version: 1 });
    assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
    const row = await prisma.bot.findUniqueOrThrow({ where: { id } });
    assert.deepEqual(row.adapterConfig, { inbound_secret: 'inbound-secret-abcdefgh', callback_url: 'http://127.0.0.1:9/cb' });
    const disabled = await api.call('PATCH', `/bots/${id}`, { enabled: false, version: 2 });
    assert.equal(disabled.body.enabled, false);
    await events.waitFor('bot', id, 3);
    const badPipeline = await api.call('PATCH', `/bots/${id}`, { pipelineId: 'nope', version: 3 });
    assert.equal(badPipeline.status, 400);
    assert.equal(badPipeline.body.field, 'body.pipelineId');
  });

  test('a viewer token reads but may not write (403); a revoked token is 401', async () => {
    const issued = await api.call('POST', '/tokens', { name: 'dashboards', role: 'viewer' });
    assert.equal(issued.status, 201);
    assert.match(issued.body.secret, /^cvt_/);
    const viewer = new AdminClient(admin.url, issued.body.secret);
    assert.equal((await viewer.call('GET', '/pipelines')).status, 200);
    const write = await viewer.call('POST', '/models', { id: 'm-viewer', baseUrl: 'http://127.0.0.1:1', model: 'x' });
    assert.equal(write.status, 403);
    assert.equal(write.body.code, 'forbidden');
    assert.equal(write.body.field, 'header.authorization');
    assert.equal((await viewer.call('GET', '/audit')).status, 403, 'the audit log is for admins');
    assert.ok(!JSON.stringify((await api.call('GET', '/tokens')).body).includes(issued.body.secret), 'the secret is shown once');
    assert.equal((await api.call('DELETE', `/tokens/${issued.body.token.id}`)).status, 204);
    assert.equal((await viewer.call('GET', '/pipelines')).status, 401);
  });

  test('every write is in the audit log with who, what and the versions, and no secret', async () => {
    const audit = await api.call('GET', '/audit?resource=model&resourceId=m1');
    assert.equal(audit.status, 200);
    const actions = audit.body.items.map((e: { action: string; versionBefore: number | null; versionAfter: number | null; actor: string }) => `${e.actor} ${e.action} ${e.versionBefore}→${e.versionAfter}`);
    assert.deepEqual(actions, ['user:admin delete 2→null', 'user:admin update 1→2', 'user:admin create null→1']);
    const all = await prisma.auditEntry.findMany();
    assert.ok(all.length >= 8);
    assert.ok(!JSON.stringify(all, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)).includes(LLM_KEY));
  });

  test('the query log pages newest first and filters by bot and status; dead letters list empty', async () => {
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
    await prisma.queryRecord.createMany({
      data: [1, 2, 3].map((s) => ({ id: `q${s}`, botId: sys.botId, launcherType: 'person', launcherId: 'u1', status: s === 2 ? 'failed' : 'succeeded', receivedAt: at(s) })),
    });
    const first = await api.call('GET', `/queries?botId=${sys.botId}&limit=2`);
    assert.deepEqual(first.body.items.map((q: { id: string }) => q.id), ['q3', 'q2']);
    const second = await api.call('GET', `/queries?botId=${sys.botId}&limit=2&cursor=${first.body.nextCursor}`);
    assert.deepEqual(second.body.items.map((q: { id: string }) => q.id), ['q1']);
    assert.equal(second.body.nextCursor, null);
    assert.deepEqual((await api.call('GET', '/queries?status=failed')).body.items.map((q: { id: string }) => q.id), ['q2']);
    const badLimit = await api.call('GET', '/queries?limit=0');
    assert.equal(badLimit.status, 400);
    assert.equal(badLimit.body.field, 'query.limit');
    assert.deepEqual((await api.call('GET', '/dead-letters')).body, { items: [], nextCursor: null });
  });

  test('dead letters: listed, resubmitted to the subject they failed on, discarded; a truncated one cannot be resubmitted', async () => {
    const nc = await connect({ servers: NATS_URL });
    try {
      const js = jetstream(nc);
      const subject = sys.topology.subjects.query(sys.botId);
      const original = Buffer.from(JSON.stringify({ hello: 'again' }));
      const letter = (data: Uint8Array) => buildDeadLetter({ source: 'orchestrator', stream: sys.topology.streams.queries.name, subject, deliveryCount: 5, reason: 'max_deliver', error: 'boom', data });
      await js.publish(sys.topology.subjects.deadLetter('orchestrator'), JSON.stringify(letter(original)));
      await js.publish(sys.topology.subjects.deadLetter('orchestrator'), JSON.stringify(letter(new Uint8Array(LIMITS.deadLetterPayloadBytes + 10))));
      const listed = await api.call('GET', '/dead-letters?source=orchestrator');
      assert.equal(listed.body.items.length, 2);
      const [whole, cut] = listed.body.items as Array<{ seq: number; payloadTruncated: boolean; subject: string }>;
      assert.deepEqual([whole.payloadTruncated, cut.payloadTruncated, whole.subject], [false, true, subject]);

      const resubmitted = await api.call('POST', `/dead-letters/${whole.seq}/resubmit`);
      assert.equal(resubmitted.status, 200, JSON.stringify(resubmitted.body));
      const back = await jetstreamManager(nc).then((jsm) => jsm.streams.getMessage(sys.topology.streams.queries.name, { seq: resubmitted.body.streamSeq }));
      assert.equal(back?.subject, subject);
      assert.deepEqual(Buffer.from(back!.data), original);
      const refused = await api.call('POST', `/dead-letters/${cut.seq}/resubmit`);
      assert.equal(refused.status, 409);
      assert.equal((await api.call('DELETE', `/dead-letters/${cut.seq}`)).status, 204);
      assert.deepEqual((await api.call('GET', '/dead-letters')).body.items, []);
      assert.equal((await api.call('GET', `/dead-letters/${cut.seq}`)).status, 404);
      const audit = await api.call('GET', '/audit?resource=dead-letter');
      assert.deepEqual(audit.body.items.map((e: { action: string }) => e.action), ['discard', 'resubmit']);
    } finally {
      await nc.close();
    }
  });

  test('the OpenAPI document lists the routes with their zod-made schemas', async () => {
    const doc = (await (await fetch(`${admin.url}/api/docs-json`)).json()) as { paths: Record<string, Record<string, { requestBody?: unknown }>>; components: { schemas: Record<string, unknown> } };
    assert.ok(doc.paths['/api/v1/models/{id}']?.patch?.requestBody);
    assert.ok(doc.components.schemas.ModelCreate);
    assert.ok(doc.components.schemas.AdminError);
  });
});
