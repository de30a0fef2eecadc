// What the deployment holds, through the admin API: knowledge bases (documents uploaded as multipart,
// ingested by the runner through the bus, their state, re-index, delete), the plugins their heartbeats
// register, each bot's webhook URL and a gateway-held bot's lease, and each platform's settings schema.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { AdminApi, LIMITS, redisKeys } from '@conveyor/contracts';
import { runPlugin, type RunningPlugin } from '@conveyor/plugin-sdk';
import { createDatabase, closeDatabase, type Database } from '@conveyor/persistence';
import { NATS_URL, REDIS_URL, addBot, startTestSystem, type TestSystem } from '../harness/system.js';
import type { RunningService } from '../harness/services.js';
import { uniqueName } from '../harness/ids.js';
import { waitUntil } from '../harness/wait.js';
import { AdminClient, startAdmin, ADMIN_PASSWORD } from './admin-support.js';

const HANDBOOK = ['The office opens at nine.', 'Visitors park on level two.', 'Lunch is served from noon.'].join('\n\n');
const INGRESS_PUBLIC_URL = 'https://bots.example.test/';

describe('admin API: knowledge bases, plugins, bot endpoints', () => {
  let sys: TestSystem;
  let admin: RunningService;
  let api: AdminClient;
  let viewer: AdminClient;
  let db: Database;
  let redis: Redis;
  let plugin: RunningPlugin | undefined;
  const kbId = uniqueName('kb-');

  /** A multipart upload as a browser sends it, with the session cookie the client keeps. */
  const upload = async (client: AdminClient, kb: string, name: string, content: Buffer | string) => {
    const form = new FormData();
    form.append(AdminApi.KNOWLEDGE_UPLOAD_FIELD, new Blob([content]), name);
    const res = await fetch(`${client.baseUrl}/api/v1/knowledge-bases/${encodeURIComponent(kb)}/documents`, { method: 'POST', body: form, headers: { cookie: client.sessionCookie() ?? '' } });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  const documentState = (id: string, until: (d: AdminApi.KnowledgeDocument) => boolean, kb = kbId) =>
    waitUntil(`document ${id} to settle`, async () => {
      const docs = AdminApi.Page(AdminApi.KnowledgeDocument).parse((await api.call('GET', `/knowledge-bases/${kb}/documents`)).body).items;
      const d = docs.find((x) => x.id === id);
      return d && until(d) ? d : undefined;
    }, 45_000);

  before(async () => {
    sys = await startTestSystem({ serviceEnv: { KNOWLEDGE_SWEEP_MS: '60000' } });
    admin = await startAdmin(sys, { INGRESS_PUBLIC_URL });
    api = new AdminClient(admin.url);
    await api.login();
    db = createDatabase(sys.db.url, 2);
    redis = new Redis(REDIS_URL);
    const model = (id: string, ability: string) => ({ id, name: id, baseUrl: sys.llm.url, apiKeyRef: 'env:CONVEYOR_KEY_E2E_LLM', modelId: `fake-${id}`, abilities: [ability] });
    await db.prisma.llmModel.createMany({ data: [model('embed', 'embedding'), model('chat', 'func_call'), { ...model('claude', 'embedding'), provider: 'anthropic' }] });
    const reader = uniqueName('reader');
    assert.equal((await api.call('POST', '/users', { username: reader, password: ADMIN_PASSWORD, role: 'viewer' })).status, 201);
    viewer = new AdminClient(admin.url);
    await viewer.login(reader, ADMIN_PASSWORD);
  });

  after(async () => {
    await plugin?.stop();
    redis?.disconnect();
    if (db) await closeDatabase(db);
    await sys?.stop();
  });

  test('a knowledge base is created only with an embedding model, and its settings are bounded', async () => {
    const wrong = await api.call('POST', '/knowledge-bases', { id: kbId, name: 'Handbook', embeddingModelId: 'chat' });
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body.field, 'body.embeddingModelId');
    const claude = await api.call('POST', '/knowledge-bases', { id: kbId, name: 'Handbook', embeddingModelId: 'claude' });
    assert.equal(claude.status, 400, 'the Anthropic API has no embeddings');
    assert.match(claude.body.message, /speaks the anthropic API, which has no embeddings endpoint/);
    const overlap = await api.call('POST', '/knowledge-bases', { id: kbId, name: 'Handbook', embeddingModelId: 'embed', chunkSize: 10, chunkOverlap: 10 });
    assert.equal(overlap.status, 400);
    const created = await api.call('POST', '/knowledge-bases', { id: kbId, name: 'Handbook', embeddingModelId: 'embed', chunkSize: 40, chunkOverlap: 0, topK: 2 });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const kb = AdminApi.KnowledgeBase.parse(created.body);
    assert.deepEqual([kb.id, kb.chunkSize, kb.topK, kb.documents, kb.chunks], [kbId, 40, 2, { pending: 0, processing: 0, done: 0, failed: 0 }, 0]);
    assert.equal((await api.call('POST', '/knowledge-bases', { id: kbId, name: 'Again', embeddingModelId: 'embed' })).status, 409);
    assert.equal((await viewer.call('POST', '/knowledge-bases', { id: uniqueName('kb-'), name: 'No', embeddingModelId: 'embed' })).status, 403);
    assert.equal((await viewer.call('GET', `/knowledge-bases/${kbId}`)).status, 200, 'a viewer reads');
  });

  test('an uploaded document is ingested by the runner to done, with its chunks; the same bytes again change nothing', async () => {
    const up = await upload(api, kbId, 'handbook.md', HANDBOOK);
    assert.equal(up.status, 201, JSON.stringify(up.body));
    const uploaded = AdminApi.KnowledgeDocumentUploaded.parse(up.body);
    assert.equal(uploaded.outcome, 'created');
    assert.equal(uploaded.document.bytes, Buffer.byteLength(HANDBOOK));
    // Published by the admin at once: the runner's sweep (every minute here) is not what ingests it.
    const done = await documentState(uploaded.document.id, (d) => d.status === 'done' || d.status === 'failed');
    assert.deepEqual([done.status, done.progress, done.error, done.chunks], ['done', 100, null, 3]);
    const kb = AdminApi.KnowledgeBase.parse((await api.call('GET', `/knowledge-bases/${kbId}`)).body);
    assert.deepEqual([kb.documents.done, kb.chunks], [1, 3]);
    const again = await upload(api, kbId, 'handbook.md', HANDBOOK);
    assert.equal(AdminApi.KnowledgeDocumentUploaded.parse(again.body).outcome, 'unchanged');
    // A file name as a browser sends it (UTF-8) is kept as it was.
    const named = await upload(api, kbId, '员工手册.txt', 'Badges open the side door.');
    assert.equal(named.status, 201, JSON.stringify(named.body));
    assert.equal(named.body.document.name, '员工手册.txt');
    await documentState(named.body.document.id, (d) => d.status === 'done');
    const audit = (await api.call('GET', `/audit?resource=knowledge-base&resourceId=${kbId}`)).body.items.map((e: AdminApi.AuditEntry) => e.action);
    assert.deepEqual(audit.sort(), ['add-document', 'add-document', 'create']);
  });

  test('a knowledge base\'s name, description and retrieval settings change through PATCH; bad values are refused naming the field', async () => {
    const id = uniqueName('kb-');
    assert.equal((await api.call('POST', '/knowledge-bases', { id, name: 'Draft', embeddingModelId: 'embed', topK: 3 })).status, 201);
    await db.prisma.llmModel.create({ data: { id: `${id}-rr`, name: 'rerank', baseUrl: sys.llm.url, apiKeyRef: 'env:CONVEYOR_KEY_E2E_LLM', modelId: 'fake-rr', abilities: ['rerank'] } });
    const patched = await api.call('PATCH', `/knowledge-bases/${id}`, { name: 'Policies', description: 'What HR wrote down', topK: 7, rerankModelId: `${id}-rr` });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    const kb = AdminApi.KnowledgeBase.parse(patched.body);
    assert.deepEqual([kb.name, kb.description, kb.topK, kb.rerankModelId, kb.embeddingModelId, kb.chunkSize, kb.retrievalMode], ['Policies', 'What HR wrote down', 7, `${id}-rr`, 'embed', 512, 'hybrid']);
    // What retrieval reads for the next question.
    const stored = await db.prisma.knowledgeBase.findUniqueOrThrow({ where: { id } });
    assert.deepEqual([stored.name, stored.topK, stored.rerankModelId], ['Policies', 7, `${id}-rr`]);
    const cleared = await api.call('PATCH', `/knowledge-bases/${id}`, { rerankModelId: null });
    assert.equal(cleared.body.rerankModelId, null);
    assert.equal((await api.call('PATCH', `/knowledge-bases/${id}`, { retrievalMode: 'fulltext' })).body.retrievalMode, 'fulltext');
    for (const [body, field] of [
      [{ chunkOverlap: 512 }, 'body.chunkOverlap'],
      [{ embeddingModelId: 'chat' }, 'body.embeddingModelId'],
      [{ retrievalMode: 'semantic' }, 'body'],
      [{ topK: 0 }, 'body.topK'],
      [{ rerankModelId: 'chat' }, 'body.rerankModelId'],
      [{}, 'body'],
    ] as const) {
      const refused = await api.call('PATCH', `/knowledge-bases/${id}`, body);
      assert.equal(refused.status, 400, JSON.stringify([body, refused.body]));
      assert.ok(String(refused.body.field ?? 'body').startsWith(field), JSON.stringify([body, refused.body]));
    }
    assert.equal((await api.call('PATCH', `/knowledge-bases/${uniqueName('kb-')}`, { name: 'x' })).status, 404);
    assert.equal((await viewer.call('PATCH', `/knowledge-bases/${id}`, { name: 'No' })).status, 403);
    const audit = (await api.call('GET', `/audit?resource=knowledge-base&resourceId=${id}`)).body.items as AdminApi.AuditEntry[];
    assert.deepEqual(audit.filter((e) => e.action === 'update').map((e) => [...e.changes].sort()), [['retrievalMode'], ['rerankModelId'], ['description', 'name', 'rerankModelId', 'topK']]);
    assert.equal((await api.call('DELETE', `/knowledge-bases/${id}`)).status, 204);
  });

  test('a new chunk size or embedding model ingests every document again; an HTML page is read as its text', async () => {
    const id = uniqueName('kb-');
    assert.equal((await api.call('POST', '/knowledge-bases', { id, name: 'Pages', embeddingModelId: 'embed', chunkSize: 400, chunkOverlap: 0 })).status, 201);
    const page = `<html><body><h1>Visitors</h1><p>${'Parking is free on level two. '.repeat(4)}</p><p>${'The lobby opens at eight. '.repeat(4)}</p><script>secret()</script></body></html>`;
    const up = await upload(api, id, 'visitors.html', page);
    assert.equal(up.status, 201, JSON.stringify(up.body));
    assert.equal(up.body.document.type, 'html');
    const first = await documentState(up.body.document.id, (d) => d.status === 'done', id);
    const before = await db.prisma.knowledgeChunk.findMany({ where: { documentId: first.id }, orderBy: { position: 'asc' } });
    assert.ok(before.length >= 1 && before.every((c) => !c.text.includes('secret') && !c.text.includes('<')), JSON.stringify(before.map((c) => c.text)));

    const rechunked = await api.call('PATCH', `/knowledge-bases/${id}`, { chunkSize: 60 });
    assert.equal(rechunked.status, 200, JSON.stringify(rechunked.body));
    const again = await documentState(first.id, (d) => d.status === 'done' && d.revision === first.revision + 1, id);
    assert.ok(again.chunks > before.length, `smaller chunks: ${again.chunks} > ${before.length}`);
    const after = await db.prisma.knowledgeChunk.findMany({ where: { documentId: first.id } });
    assert.ok(after.every((c) => c.text.length <= 60), 'cut at the new size');

    await db.prisma.llmModel.create({ data: { id: `${id}-e2`, name: 'embed 2', baseUrl: sys.llm.url, apiKeyRef: 'env:CONVEYOR_KEY_E2E_LLM', modelId: 'fake-embed-2', abilities: ['embedding'] } });
    const embedsBefore = sys.llm.embeddingRequests.length;
    assert.equal((await api.call('PATCH', `/knowledge-bases/${id}`, { embeddingModelId: `${id}-e2` })).status, 200);
    await documentState(first.id, (d) => d.status === 'done' && d.revision === first.revision + 2, id);
    assert.ok(sys.llm.embeddingRequests.slice(embedsBefore).some((r) => r.model === 'fake-embed-2'), 'embedded with the new model');
    const audit = (await api.call('GET', `/audit?resource=knowledge-base&resourceId=${id}`)).body.items as AdminApi.AuditEntry[];
    assert.deepEqual(audit.filter((e) => e.action === 'update').map((e) => e.changes), [['embeddingModelId'], ['chunkSize']]);
    assert.equal((await api.call('DELETE', `/knowledge-bases/${id}`)).status, 204);
  });

  test('uploads are refused for an unknown format, past the size bound, without a file, and from a viewer', async () => {
    const exe = await upload(api, kbId, 'tool.exe', 'MZ');
    assert.equal(exe.status, 400);
    assert.match(exe.body.message, /unsupported document type/);
    const big = await upload(api, kbId, 'big.txt', Buffer.alloc(LIMITS.knowledgeDocumentBytes + 1, 'a'));
    assert.equal(big.status, 413);
    assert.equal(big.body.code, 'validation_failed');
    const none = await fetch(`${api.baseUrl}/api/v1/knowledge-bases/${kbId}/documents`, { method: 'POST', body: new FormData(), headers: { cookie: api.sessionCookie() ?? '' } });
    assert.equal(none.status, 400);
    assert.equal((await upload(viewer, kbId, 'note.txt', 'hello')).status, 403);
    // Bodies that are not one well-formed file: each a 4xx naming the body, never a 500.
    const raw = (contentType: string, body: string) => fetch(`${api.baseUrl}/api/v1/knowledge-bases/${kbId}/documents`, { method: 'POST', body, headers: { cookie: api.sessionCookie() ?? '', 'content-type': contentType } });
    const twoFiles = new FormData();
    twoFiles.append(AdminApi.KNOWLEDGE_UPLOAD_FIELD, new Blob(['a']), 'a.txt');
    twoFiles.append(AdminApi.KNOWLEDGE_UPLOAD_FIELD, new Blob(['b']), 'b.txt');
    const otherField = new FormData();
    otherField.append('document', new Blob(['a']), 'a.txt');
    for (const res of [
      await raw('multipart/form-data; boundary=xyz', '--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nunfinished'),
      await raw('multipart/form-data', 'no boundary at all'),
      await raw('application/json', '{"file":"not a file"}'),
      await fetch(`${api.baseUrl}/api/v1/knowledge-bases/${kbId}/documents`, { method: 'POST', body: twoFiles, headers: { cookie: api.sessionCookie() ?? '' } }),
      await fetch(`${api.baseUrl}/api/v1/knowledge-bases/${kbId}/documents`, { method: 'POST', body: otherField, headers: { cookie: api.sessionCookie() ?? '' } }),
    ]) {
      const answer = (await res.json()) as { field?: unknown };
      assert.ok(res.status >= 400 && res.status < 500, `${res.status} ${JSON.stringify(answer)}`);
      assert.match(String(answer.field), /^body/, JSON.stringify(answer));
    }
    assert.equal((await upload(api, uniqueName('kb-missing-'), 'note.txt', 'hello')).status, 404);
  });

  test('a failing embedding model: failed with the reason; another upload waits its turn (409); re-index ingests it again', async () => {
    sys.llm.failEmbeddings({ status: 500, message: 'embedding backend down' });
    let docId: string;
    try {
      const up = await upload(api, kbId, 'broken.txt', 'A note about the broken embedding backend.');
      assert.equal(up.status, 201);
      docId = up.body.document.id;
      // It waits or is being ingested (three tries, 1.5 s of back-off at least): one document at a time.
      const second = await upload(api, kbId, 'second.txt', 'Another note.');
      assert.equal(second.status, 409, JSON.stringify(second.body));
      assert.match(second.body.message, /one document at a time/);
      const failed = await documentState(docId, (d) => d.status === 'failed');
      assert.match(failed.error ?? '', /embedding backend down \(after 3 tries\)/);
    } finally {
      sys.llm.failEmbeddings(undefined);
    }
    const re = await api.call('POST', `/knowledge-bases/${kbId}/documents/${docId}/reindex`);
    assert.equal(re.status, 200, JSON.stringify(re.body));
    assert.equal(re.body.revision, 2);
    const done = await documentState(docId, (d) => d.status === 'done');
    assert.equal(done.chunks, 2);
    assert.equal((await api.call('DELETE', `/knowledge-bases/${kbId}/documents/${docId}`)).status, 204);
    assert.equal(await db.prisma.knowledgeChunk.count({ where: { documentId: docId } }), 0, 'its chunks went with it');
    assert.equal((await api.call('DELETE', `/knowledge-bases/${kbId}/documents/${docId}`)).status, 404);
  });

  test('a knowledge base a pipeline retrieves from cannot be deleted; once unbound it goes with its documents', async () => {
    const p = (await api.call('GET', '/pipelines/default')).body;
    const bound = await api.call('PATCH', '/pipelines/default', { config: { ...p.config, ai: { ...p.config.ai, 'local-agent': { ...p.config.ai['local-agent'], 'knowledge-bases': [kbId] } } } }, { 'if-match': String(p.version) });
    assert.equal(bound.status, 200, JSON.stringify(bound.body));
    const refused = await api.call('DELETE', `/knowledge-bases/${kbId}`);
    assert.equal(refused.status, 409);
    assert.match(refused.body.message, /pipeline\(s\) default/);
    const unbound = await api.call('PATCH', '/pipelines/default', { config: p.config }, { 'if-match': String(bound.body.version) });
    assert.equal(unbound.status, 200);
    assert.equal((await api.call('DELETE', `/knowledge-bases/${kbId}`)).status, 204);
    assert.equal((await api.call('GET', `/knowledge-bases/${kbId}`)).status, 404);
    assert.equal(await db.prisma.knowledgeDocument.count({ where: { knowledgeBaseId: kbId } }), 0);
  });

  test('a plugin sending heartbeats is listed with its version, events, last heartbeat and the pipelines binding it', async () => {
    const name = `tests/${uniqueName('listed')}`;
    plugin = await runPlugin({ name, version: '1.4.2', prefix: sys.prefix, natsUrl: NATS_URL, heartbeatMs: 300, handlers: { PersonNormalMessageReceived: () => undefined } });
    const listed = await waitUntil('the plugin in the list', async () => AdminApi.PluginList.parse((await viewer.call('GET', '/plugins')).body).items.find((p) => p.name === name), 20_000);
    assert.deepEqual([listed.version, listed.events, listed.pipelines], ['1.4.2', ['PersonNormalMessageReceived'], ['default']]);
    const first = Date.parse(listed.lastHeartbeatAt);
    await waitUntil('a later heartbeat', async () => {
      const again = AdminApi.PluginList.parse((await api.call('GET', '/plugins')).body).items.find((p) => p.name === name);
      return again && Date.parse(again.lastHeartbeatAt) > first ? again : undefined;
    }, 20_000);
    await plugin.stop();
    plugin = undefined;
    await waitUntil('the registration to lapse', async () => !AdminApi.PluginList.parse((await api.call('GET', '/plugins')).body).items.some((p) => p.name === name), 20_000);
  });

  test("a webhook bot's URL under INGRESS_PUBLIC_URL; a gateway-held bot's lease holder and state", async () => {
    const hook = AdminApi.BotEndpoint.parse((await viewer.call('GET', `/bots/${sys.botId}/endpoint`)).body);
    assert.deepEqual([hook.webhookPath, hook.webhookUrl, hook.gatewayHeld, hook.connection], [`/bots/${sys.botId}`, `https://bots.example.test/bots/${sys.botId}`, false, null]);
    const discord = await addBot(sys, 'Held bot', 'discord', { client_id: '123', token: 'discord-bot-token' });
    const free = AdminApi.BotEndpoint.parse((await api.call('GET', `/bots/${discord}/endpoint`)).body);
    assert.deepEqual([free.webhookUrl, free.gatewayHeld, free.connection], [null, true, { state: 'not_held', holder: null, leaseExpiresInMs: null, resumable: false }]);
    const keys = redisKeys(sys.prefix);
    await redis.set(keys.connectionLease(discord), 'gateway-7f3a|12', 'PX', 30_000);
    await redis.set(keys.connectionState(discord), '{"session":"s"}', 'PX', 60_000);
    try {
      const held = AdminApi.BotEndpoint.parse((await api.call('GET', `/bots/${discord}/endpoint`)).body);
      assert.equal(held.connection?.state, 'held');
      assert.equal(held.connection?.holder, 'gateway-7f3a');
      assert.equal(held.connection?.resumable, true);
      assert.ok((held.connection?.leaseExpiresInMs ?? 0) > 0 && (held.connection?.leaseExpiresInMs ?? 0) <= 30_000);
    } finally {
      await redis.del(keys.connectionLease(discord), keys.connectionState(discord));
    }
    assert.equal((await api.call('GET', '/bots/00000000-0000-4000-8000-000000000000/endpoint')).status, 404);
  });

  test('every platform comes with its settings schema (secrets marked), and the OpenAPI document has the new routes', async () => {
    const list = AdminApi.PlatformList.parse((await viewer.call('GET', '/platforms')).body).items;
    const telegram = list.find((p) => p.name === 'telegram')!;
    assert.equal(telegram.webhook, true);
    assert.deepEqual((telegram.configSchema.properties as Record<string, { secret?: boolean }>).token.secret, true);
    assert.deepEqual(list.find((p) => p.name === 'onebot')!.connection, true);
    assert.ok(!list.some((p) => p.name === 'webchat'), 'the web chat is no bot adapter');
    // Every platform package (libs/platforms/<name>, named as its adapter) is offered, each once; the
    // web chat is the one a bot cannot be made of.
    const platformsDir = fileURLToPath(new URL('../../../libs/platforms/', import.meta.url));
    const packages = readdirSync(platformsDir, { withFileTypes: true })
      .filter((d) => d.isDirectory() && !['registry', 'webchat'].includes(d.name) && existsSync(join(platformsDir, d.name, 'package.json')))
      .map((d) => d.name);
    assert.ok(packages.length > 0, platformsDir);
    assert.deepEqual(list.map((p) => p.name).sort(), packages.sort());
    // The WeChat family: webhooks, each setting titled for the console's form, the keys secret.
    for (const [name, secrets] of [['officialaccount', ['token', 'EncodingAESKey', 'AppSecret']], ['wecomcs', ['secret', 'token', 'EncodingAESKey']], ['wecombot', ['Token', 'EncodingAESKey', 'Secret']]] as const) {
      const p = list.find((x) => x.name === name);
      assert.equal(p?.webhook, true, name);
      const props = (p?.configSchema.properties ?? {}) as Record<string, { title?: string; secret?: boolean }>;
      assert.ok(Object.values(props).every((f) => typeof f.title === 'string' && f.title !== ''), `${name}: every setting has a title`);
      for (const key of secrets) assert.equal(props[key]?.secret, true, `${name}.${key}`);
    }
    const doc = (await (await fetch(`${admin.url}/api/docs-json`)).json()) as { paths: Record<string, Record<string, { requestBody?: { content?: Record<string, unknown> } }>> };
    assert.ok(doc.paths['/api/v1/knowledge-bases/{id}/documents']?.post?.requestBody?.content?.['multipart/form-data'], 'the upload is multipart in the document');
    assert.ok(doc.paths['/api/v1/knowledge-bases/{id}']?.patch?.requestBody?.content?.['application/json'], 'the knowledge base PATCH with its body');
    for (const path of ['/api/v1/knowledge-bases', '/api/v1/knowledge-bases/{id}/documents/{documentId}/reindex', '/api/v1/plugins', '/api/v1/bots/{id}/endpoint']) assert.ok(doc.paths[path], path);
  });
});
