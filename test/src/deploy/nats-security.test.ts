import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { topology, type Topology } from '@conveyor/contracts';
import { awaitStreams, BusPublisher, connectBus, ensureConsumers, ensureStreams, PluginHostServer, startConsumer, StreamNotProvisionedError, subjectMatches } from '@conveyor/bus';
import { uniqueName } from '../harness/ids.js';
import { waitUntil } from '../harness/wait.js';
import { runPlugin } from '@conveyor/plugin-sdk';
import { committedNatsConfigs, natsServerConfig, servicePermissions, SERVICE_ROLES } from './nats-config.js';
import { startSecuredNats, type SecuredNats } from './nats-server.js';

const Ping = z.object({ v: z.literal(1), n: z.number().int() });

describe('NATS permissions', () => {
  test('the committed server configs are generated from the broker contract', () => {
    for (const { file, content } of committedNatsConfigs()) {
      assert.equal(readFileSync(file, 'utf8'), content, `${file} is stale: run \`node test/dist/deploy/nats-config.js\``);
    }
  });

  test('each role publishes only to its own outputs and pulls only its own consumer', () => {
    const topo = topology('conveyor');
    const perms = servicePermissions(topo);
    const roleConsumers = { orchestrator: topo.consumers.orchestrator, runner: topo.consumers.runner, dispatcher: topo.consumers.dispatcher };
    for (const role of SERVICE_ROLES) {
      const pub = perms[role].publish;
      for (const [other, spec] of Object.entries(roleConsumers)) {
        const pull = `$JS.API.CONSUMER.MSG.NEXT.${spec.stream}.${spec.durable}`;
        assert.equal(pub.includes(pull), other === role, `${role} ${other === role ? 'must' : 'must not'} pull ${spec.durable}`);
      }
      // Knowledge base ingestion runs on the runner, which holds the embedding models' keys.
      const ingest = topo.consumers.ingest;
      assert.equal(pub.includes(`$JS.API.CONSUMER.MSG.NEXT.${ingest.stream}.${ingest.durable}`), role === 'runner', `${role} and the ingest consumer`);
      // The admin API resubmits a dead letter to the subject it failed on, whichever stream that is.
      assert.equal(pub.includes(topo.streams.ingest.subjects[0]), role === 'runner' || role === 'admin', `${role} publishing ingestion jobs`);
      // The orchestrator publishes a message waiting for its session again, before its deliveries run out.
      // The gateway publishes what arrives on the platform connections it holds; the admin API resubmits dead letters.
      assert.equal(pub.includes(topo.streams.queries.subjects[0]), role === 'ingress' || role === 'orchestrator' || role === 'gateway' || role === 'admin', `${role} and the query subjects`);
      // The runner has a second consumer (MAX_DELIVERIES advisories) with dead letters of its own.
      const ownDeadLetters = role === 'runner' ? [topo.subjects.deadLetter('runner'), topo.subjects.deadLetter('runner-advisories'), topo.subjects.deadLetter('ingest')] : [topo.subjects.deadLetter(role)];
      assert.ok(!pub.some((s) => s.includes('.dlq.') && !ownDeadLetters.includes(s)), `${role} writes only its own dead letters`);
      assert.ok(!pub.some((s) => s === '>' || s.startsWith('$JS.API.>') || /^\$JS\.API\.(STREAM|CONSUMER)\.DELETE\./.test(s) || s.includes('.PURGE.')), `${role} has no admin rights`);
      // Only the admin service (and its migrate job, as the same user) creates and updates the streams.
      const streamManagement = pub.filter((s) => /^\$JS\.API\.STREAM\.(CREATE|UPDATE)\./.test(s));
      assert.deepEqual(streamManagement, role === 'admin' ? Object.values(topo.streams).flatMap((st) => [`$JS.API.STREAM.CREATE.${st.name}`, `$JS.API.STREAM.UPDATE.${st.name}`]) : [], `${role} managing streams`);
      // Only the runner reads and removes single stored messages of the runs (abandoned ones it answered),
      // and only the admin API those of the dead letters (listed, resubmitted, discarded).
      const storedMessageRights = pub.filter((s) => s.startsWith('$JS.API.STREAM.MSG.') || s.startsWith('$JS.API.DIRECT.'));
      const storedIn = (stream: string) => [`$JS.API.STREAM.MSG.GET.${stream}`, `$JS.API.STREAM.MSG.DELETE.${stream}`];
      assert.deepEqual(storedMessageRights, role === 'runner' ? storedIn(topo.streams.runs.name) : role === 'admin' ? storedIn(topo.streams.deadLetters.name) : [], `${role} and stored messages`);
      // Core NATS reply parts: the dispatcher sends them, the ingress (holding the waiting call or the
      // browser's event stream) receives them and answers the sync ones.
      const coreReplies = [topo.subjects.allSyncReplies, topo.subjects.allWebchatSessions];
      assert.deepEqual(pub.filter((s) => coreReplies.includes(s)), role === 'dispatcher' ? coreReplies : [], `${role} publishing reply parts`);
      // The services that emit plugin events or offer plugins' tools follow the plugins' heartbeats, ask for them and call the plugins.
      const plugins = topo.subjects.plugins;
      const callsPlugins = role === 'orchestrator' || role === 'dispatcher' || role === 'runner';
      // The runner answers plugins' host calls, a streamed one with several messages to the plugin's inbox.
      // The admin lists plugins from their heartbeats and tells one its settings changed; it calls none.
      assert.deepEqual(pub.filter((s) => s.includes('.plugin.')), callsPlugins ? [plugins.discover, plugins.allCalls, ...(role === 'runner' ? [plugins.allInboxes] : [])] : role === 'admin' ? [plugins.discover, plugins.allSettingsChanged] : [], `${role} calling plugins`);
      const ownSubscriptions = { ingress: coreReplies, dispatcher: [topo.subjects.dispatchSent, plugins.heartbeat, topo.subjects.directSend], orchestrator: [plugins.heartbeat, topo.subjects.takeoverEvents], runner: [plugins.heartbeat, topo.subjects.allSandboxMcpOutputs, plugins.allHosts], gateway: [topo.subjects.allGatewaySends], admin: [plugins.heartbeat, ...topo.streams.queries.subjects, ...topo.streams.events.subjects, topo.subjects.takeoverEvents], sandbox: [topo.subjects.sandboxCall, topo.subjects.sandboxMcpOpen, topo.subjects.allSandboxMcpInputs] }[role];
      // Every service hears configuration changes; only the admin API announces them.
      assert.deepEqual(perms[role].subscribe, [`${topo.subjects.inboxPrefix(role)}.>`, topo.subjects.configChanged, ...ownSubscriptions], `${role} subscriptions`);
      assert.equal(pub.includes(topo.subjects.configChanged), role === 'admin', `${role} announcing configuration changes`);
      // Only dispatchers tell each other which events' parts went out.
      assert.equal(pub.includes(topo.subjects.dispatchSent), role === 'dispatcher', `${role} publishing sent notices`);
      // Outbound parts for held connections: the dispatcher asks, the gateway holding the bot answers.
      assert.equal(pub.includes(topo.subjects.allGatewaySends), role === 'dispatcher', `${role} sending to gateways`);
      // Sandbox calls: only runners ask, only the sandbox role answers.
      assert.equal(pub.includes(topo.subjects.sandboxCall), role === 'runner', `${role} asking the sandbox`);
      // Stdio MCP servers in the sandbox: runners start them and write to them, the sandbox relays what they write.
      assert.equal(pub.includes(topo.subjects.sandboxMcpOpen) && pub.includes(topo.subjects.allSandboxMcpInputs), role === 'runner', `${role} starting MCP servers in the sandbox`);
      assert.equal(pub.includes(topo.subjects.allSandboxMcpOutputs), role === 'sandbox', `${role} relaying MCP servers' output`);
      assert.equal(perms[role].allowResponses === true, role === 'ingress' || role === 'gateway' || role === 'sandbox' || role === 'dispatcher', `${role} answering requests`);
      // Direct sends to chats: runners ask for plugins, admins for operators, dispatchers send.
      assert.equal(pub.includes(topo.subjects.directSend), role === 'runner' || role === 'admin', `${role} asking for direct sends`);
      // Takeover changes: only the admin announces them.
      assert.equal(pub.includes(topo.subjects.takeoverEvents), role === 'admin', `${role} announcing takeovers`);
    }
  });

  test('the core NATS wildcards cover the subjects the services use', () => {
    const topo = topology('conveyor');
    assert.ok(subjectMatches(topo.subjects.allSyncReplies, topo.subjects.syncReply(randomUUID())));
    assert.ok(subjectMatches(topo.subjects.allSandboxMcpInputs, topo.subjects.sandboxMcpInput(randomUUID())));
    assert.ok(subjectMatches(topo.subjects.allSandboxMcpOutputs, topo.subjects.sandboxMcpOutput(randomUUID())));
    assert.ok(!subjectMatches(topo.subjects.allSandboxMcpInputs, topo.subjects.sandboxMcpOpen));
    assert.ok(subjectMatches(topo.subjects.allWebchatSessions, topo.subjects.webchat(randomUUID(), 'a.session*id')));
    assert.ok(!subjectMatches(topo.subjects.allWebchatSessions, topo.subjects.syncReply(randomUUID())));
  });
});

describe('a service against a NATS server with the generated config', () => {
  let nats: SecuredNats;
  let topo: Topology;
  const open: NatsConnection[] = [];

  async function connectAs(role: 'ingress' | 'orchestrator' | 'runner' | 'dispatcher' | 'admin' | 'ops'): Promise<NatsConnection> {
    // Credentials as the services get them (NATS_USER plus a mounted password file), and the role's inbox prefix as infra gives it.
    const extra = role === 'ops' ? {} : { inboxPrefix: topo.subjects.inboxPrefix(role) };
    const nc = await connectBus({ url: nats.url, name: `sec-${role}`, env: await nats.credentialsEnv(role), extra });
    open.push(nc);
    return nc;
  }

  before(async () => {
    topo = topology(uniqueName('s'));
    nats = await startSecuredNats(topo.prefix);
  });

  after(async () => {
    for (const nc of open) await nc.close().catch(() => undefined);
    await nats?.stop();
  });

  test('a role reads only its own replies: every inbox but its own, and the shared `_INBOX.>`, are refused', async () => {
    const ingress = await connectAs('ingress');
    const violations = (target: string) => nats.logs.filter((l) => l.includes('Subscription Violation') && l.includes('"ingress"') && l.includes(target)).length;
    for (const target of ['_INBOX.>', `${topo.subjects.inboxPrefix('runner')}.>`, `${topo.subjects.inboxPrefix('admin')}.>`]) {
      ingress.subscribe(target);
      await ingress.flush();
      await waitUntil(`the server refused ${target}`, () => violations(target) > 0, 5_000);
    }
    // Its own inbox works: a request gets its answer (the JetStream API's, for account info).
    const jsm = await jetstreamManager(ingress);
    assert.ok((await jsm.getAccountInfo()).limits !== undefined);
    assert.ok(topo.subjects.inboxPrefix('ingress') !== topo.subjects.inboxPrefix('runner'));
  });

  test('a wrong password or no credentials are refused', async () => {
    await assert.rejects(connectBus({ url: nats.url, name: 'nobody', env: false }), /Authorization/i);
    await assert.rejects(connectBus({ url: nats.url, name: 'liar', env: { NATS_USER: 'runner', NATS_PASSWORD: 'wrong' } }), /Authorization/i);
  });

  test('the runner waits for the admin service to provision the streams, pulls and acks its own consumer and publishes events, and is denied everything else', async () => {
    const nc = await connectAs('runner');
    const js = jetstream(nc, { timeout: 3_000 });
    const jsm = await jetstreamManager(nc);
    const streams = Object.values(topo.streams);
    // No stream yet: the runner may not create one, so it says so and waits.
    await assert.rejects(ensureStreams(jsm, streams), (err: unknown) => err instanceof StreamNotProvisionedError && err.stream === streams[0].name && err.drift.length === 0);
    const warnings: string[] = [];
    const logger = { info() {}, warn: (_obj: object, msg?: string) => void warnings.push(msg ?? ''), error() {} };
    const waiting = awaitStreams(jsm, streams, { timeoutMs: 120_000, logger });
    await waitUntil('the runner says what it waits for', () => warnings.length > 0, 30_000);
    assert.match(warnings[0], /the admin service provisions them/);
    // The admin service provisions them; the runner goes on.
    await ensureStreams(await jetstreamManager(await connectAs('admin')), streams);
    assert.equal((await waiting).length, streams.length);
    await ensureConsumers(jsm, [topo.consumers.runner]);
    // It may not change one either.
    await assert.rejects(jsm.streams.update(topo.streams.events.name, { max_age: 60_000_000_000 }), /permission/i);
    const publisher = new BusPublisher(js, { streams });

    // Allowed: its own output.
    const ack = await publisher.publish(topo.subjects.event('bot'), Ping, { v: 1, n: 1 }, { msgId: 'evt-1' });
    assert.equal(ack.stream, topo.streams.events.name);

    // Allowed: pulling and acking its own consumer (the run is put there by the ops user).
    const ops = await connectAs('ops');
    await jetstream(ops).publish(topo.subjects.run('bot'), JSON.stringify({ v: 1, n: 7 }), { msgID: 'run-1' });
    const seen: number[] = [];
    const consumer = await startConsumer({
      js,
      spec: topo.consumers.runner,
      schema: Ping,
      source: 'runner',
      deadLetterSubject: topo.subjects.deadLetter('runner'),
      publisherForDeadLetters: publisher,
      handler: (p) => {
        seen.push(p.n);
      },
    });
    try {
      await waitUntil('the run is consumed', () => seen.length === 1, 10_000);
      const opsJsm = await jetstreamManager(ops);
      await waitUntil('the run is acked', async () => (await opsJsm.consumers.info(topo.streams.runs.name, topo.consumers.runner.durable)).num_ack_pending === 0, 10_000);
      assert.equal((await opsJsm.streams.info(topo.streams.runs.name)).state.messages, 0, 'work-queue message removed on ack');
    } finally {
      await consumer.stop({ timeoutMs: 2_000 });
    }

    // Denied: a subject it does not own (queries belong to the ingress).
    await assert.rejects(
      publisher.publish(topo.subjects.query('bot'), Ping, { v: 1, n: 2 }, { msgId: 'q-1', timeoutMs: 2_000 }),
      /permission|timeout|no responders/i,
    );
    // Denied: another role's consumer and another role's dead letters.
    await assert.rejects(js.consumers.get(topo.streams.queries.name, topo.consumers.orchestrator.durable).then((c) => c.info()), /permission|timeout/i);
    await assert.rejects(
      publisher.publish(topo.subjects.deadLetter('orchestrator'), Ping, { v: 1, n: 3 }, { msgId: 'dl-1', timeoutMs: 2_000 }),
      /permission|timeout|no responders/i,
    );
    // Denied: deleting a stream, or a message of a stream other than the runs.
    await assert.rejects(jsm.streams.delete(topo.streams.events.name), /permission|timeout/i);
    await assert.rejects(jsm.streams.deleteMessage(topo.streams.events.name, 1), /permission|timeout/i);

    const opsJsm = await jetstreamManager(ops);
    assert.equal((await opsJsm.streams.info(topo.streams.queries.name)).state.messages, 0, 'nothing reached the query stream');
    assert.equal((await opsJsm.streams.info(topo.streams.events.name)).state.messages, 1, 'the event is stored');
    await waitUntil('the server logged the violation', () => nats.logs.some((l) => /Publish Violation - User "runner", Subject "[^"]*\.query\.bot"/.test(l)), 5_000);
  });

  test('a plugin signs in as the plugin user: it announces itself and answers a host\'s call, and is denied the streams', async () => {
    const credentials = await nats.credentialsEnv('plugin');
    const orchestrator = await connectAs('orchestrator');
    const plugins = topo.subjects.plugins;
    const beats: string[] = [];
    const sub = orchestrator.subscribe(plugins.heartbeat, { callback: (_err, msg) => void beats.push(msg.string()) });
    await orchestrator.flush();
    const plugin = await runPlugin({
      natsUrl: nats.url,
      natsUser: credentials.NATS_USER,
      natsPassword: readFileSync(credentials.NATS_PASSWORD_FILE!, 'utf8').trim(),
      prefix: topo.prefix,
      name: 'sec/plugin',
      heartbeatMs: 500,
      onError: () => undefined,
      handlers: { PersonNormalMessageReceived: (ctx) => ctx.preventDefault() },
    });
    try {
      await waitUntil('the heartbeat reached the host', () => beats.some((b) => b.includes('sec/plugin')), 10_000);
      const event = { event_name: 'PersonNormalMessageReceived', launcher_type: 'person', launcher_id: 'u', sender_id: 'u', text_message: 'hi', message_chain: [] };
      const answer = await orchestrator.request(plugins.call('sec/plugin'), JSON.stringify({ v: 1, queryId: 'q', botId: 'b', pipelineId: 'p', event }), { timeout: 5_000 });
      assert.equal((answer.json() as { prevent_default?: boolean }).prevent_default, true);

      // Its connection may not reach the streams: a query published by it is refused and logged.
      const own = await connectBus({ url: nats.url, name: 'sec-plugin-raw', env: credentials });
      open.push(own);
      own.publish(topo.subjects.query('bot'), JSON.stringify({ v: 1, n: 1 }));
      await waitUntil('the server refused the plugin\'s publish', () => nats.logs.some((l) => /Publish Violation - User "plugin", Subject "[^"]*\.query\.bot"/.test(l)), 5_000);
    } finally {
      sub.unsubscribe();
      await plugin.stop();
    }
  });

  test('the ingress may publish queries but not run requests', async () => {
    const nc = await connectAs('ingress');
    const js = jetstream(nc, { timeout: 3_000 });
    const publisher = new BusPublisher(js, { streams: Object.values(topo.streams) });
    const ack = await publisher.publish(topo.subjects.query('bot'), Ping, { v: 1, n: 1 }, { msgId: 'query-1' });
    assert.equal(ack.stream, topo.streams.queries.name);
    await assert.rejects(publisher.publish(topo.subjects.run('bot'), Ping, { v: 1, n: 1 }, { msgId: 'run-x', timeoutMs: 2_000 }), /permission|timeout|no responders/i);
    // Subscribing to the core subjects directly (bypassing JetStream) is refused too.
    const sub = nc.subscribe(topo.streams.queries.subjects[0]);
    const ended = await Promise.race([sub.closed.then(() => 'closed', (e: Error) => `error: ${e.message}`), new Promise((r) => setTimeout(() => r('still open'), 3_000))]);
    assert.match(String(ended), /permission|closed/i);
    await waitUntil('the server refused the subscription', () => nats.logs.some((l) => /Subscription Violation - User "ingress"/.test(l)), 5_000);
    // It receives web chat parts, it does not send them.
    nc.publish(topo.subjects.webchat('bot', 'session'), 'part');
    await waitUntil('the server refused the web chat part', () => nats.logs.some((l) => /Publish Violation - User "ingress", Subject "[^"]*\.webchat\.bot\.session"/.test(l)), 5_000);
  });
});

describe('NATS permissions: plugins with identities of their own', () => {
  let nats: SecuredNats;
  let topo: Topology;
  const open: NatsConnection[] = [];
  const names = ['sec/alpha', 'sec/beta'];

  before(async () => {
    topo = topology(uniqueName('p'));
    nats = await startSecuredNats(topo.prefix, { plugins: names, sharedPluginUser: false });
  });
  after(async () => {
    for (const nc of open) await nc.close().catch(() => undefined);
    await nats?.stop();
  });

  test('each plugin hears and answers only its own calls; the shared plugin user is gone', async () => {
    const host = await connectBus({ url: nats.url, name: 'sec-host', env: await nats.credentialsEnv('orchestrator'), extra: { inboxPrefix: topo.subjects.inboxPrefix('orchestrator') } });
    open.push(host);
    const alphaCredentials = nats.pluginCredentials('sec/alpha');
    const alpha = await runPlugin({
      natsUrl: nats.url,
      natsUser: alphaCredentials.user,
      natsPassword: alphaCredentials.password,
      prefix: topo.prefix,
      name: 'sec/alpha',
      heartbeatMs: 500,
      onError: () => undefined,
      handlers: { PersonNormalMessageReceived: (ctx) => ctx.preventDefault() },
    });
    try {
      const event = { event_name: 'PersonNormalMessageReceived', launcher_type: 'person', launcher_id: 'u', sender_id: 'u', text_message: 'hi', message_chain: [] };
      const call = JSON.stringify({ v: 1, queryId: 'q', botId: 'b', pipelineId: 'p', event });
      const answer = await host.request(topo.subjects.plugins.call('sec/alpha'), call, { timeout: 5_000 });
      assert.equal((answer.json() as { prevent_default?: boolean }).prevent_default, true);

      // Alpha's user listening for beta's calls (or every plugin's) is refused, and hears none of them.
      const raw = await connectBus({ url: nats.url, name: 'sec-alpha-raw', env: { NATS_USER: alphaCredentials.user, NATS_PASSWORD: alphaCredentials.password } });
      open.push(raw);
      const heard: string[] = [];
      for (const subject of [topo.subjects.plugins.call('sec/beta'), topo.subjects.plugins.allCalls]) {
        raw.subscribe(subject, { callback: (err, msg) => void (err || heard.push(msg.subject)) });
      }
      await raw.flush();
      await waitUntil('the server refused both subscriptions', () => nats.logs.filter((l) => l.includes('Subscription Violation') && l.includes(alphaCredentials.user)).length >= 2, 10_000);
      // Beta has no plugin running: the call finds nobody (alpha cannot take it).
      await assert.rejects(host.request(topo.subjects.plugins.call('sec/beta'), call, { timeout: 2_000 }), /no responders|timeout/i);
      assert.deepEqual(heard, []);

      // The host API as alpha: a streamed answer (two messages) from a runner reaches alpha's inbox;
      // alpha may not call as beta nor read beta's inbox.
      const runner = await connectBus({ url: nats.url, name: 'sec-runner', env: await nats.credentialsEnv('runner'), extra: { inboxPrefix: topo.subjects.inboxPrefix('runner') } });
      open.push(runner);
      const hostServer = new PluginHostServer(runner, topo.prefix, async (request, emit) => {
        emit('one ');
        return { op: request.op, value: null };
      }, { classify: () => undefined });
      await hostServer.start();
      try {
        const deltas: string[] = [];
        const result = await alpha.host.invokeLlm('p', [{ role: 'user', content: 'hi' }], { onDelta: (d) => deltas.push(d) }).catch((err: unknown) => err);
        assert.deepEqual(deltas, ['one '], 'the streamed message reached alpha\'s inbox');
        assert.ok(!(result instanceof Error), String(result));
        raw.publish(topo.subjects.plugins.host('sec/beta'), JSON.stringify({ v: 1, plugin: 'sec/beta', op: 'storage.get', key: 'k' }));
        raw.subscribe(`${topo.subjects.plugins.inboxPrefix('sec/beta')}.>`);
        await raw.flush().catch(() => undefined);
        await waitUntil('the server refused calling as beta', () => nats.logs.some((l) => l.includes('Publish Violation') && l.includes(alphaCredentials.user) && l.includes('.plugin.host.')), 10_000);
        await waitUntil('the server refused reading beta\'s inbox', () => nats.logs.some((l) => l.includes('Subscription Violation') && l.includes(alphaCredentials.user) && l.includes('.plugin.sec~2fbeta')), 10_000);
      } finally {
        hostServer.stop();
      }

      // Without the shared user, its name and password sign nobody in.
      await assert.rejects(connectBus({ url: nats.url, name: 'sec-shared', env: await nats.credentialsEnv('plugin') }), /Authorization/i);
    } finally {
      await alpha.stop();
    }
  });

  test('two plugin names that would share a password variable are refused by the generator', () => {
    assert.throws(() => natsServerConfig({ plugins: ['a/b', 'a-b'] }), /same password variable NATS_PLUGIN_A_B_PASSWORD/);
  });
});
