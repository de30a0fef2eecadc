import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { connect, headers as natsHeaders } from '@nats-io/transport-node';
import { HEADERS, PluginEventReply, PluginRegistration, topology, type PluginEventRequest } from '@conveyor/contracts';
import { pluginSubjects, PLUGIN_ERROR_HEADER, runPlugin } from '@conveyor/plugin-sdk';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const encode = (x: unknown) => new TextEncoder().encode(JSON.stringify(x));

/** The SDK carries its own copy of the wire format (it is published without Conveyor's schemas); it must agree with the contracts. */
test('the SDK builds the subjects the contracts build', () => {
  for (const prefix of ['conveyor', 't0a1b2', 'my-tenant_2']) {
    const ours = topology(prefix).subjects.plugins;
    const sdk = pluginSubjects(prefix);
    assert.equal(sdk.heartbeat, ours.heartbeat);
    assert.equal(sdk.discover, ours.discover);
    for (const name of ['conveyor/keyword-reply', 'a.b/c-d_e', 'x/y.z']) {
      assert.equal(sdk.call(name), ours.call(name));
      assert.equal(sdk.host(name), ours.host(name));
      assert.equal(sdk.inboxPrefix(name), ours.inboxPrefix(name));
    }
  }
  assert.equal(PLUGIN_ERROR_HEADER, HEADERS.pluginError);
});

test('an SDK plugin\'s heartbeat and replies are valid under the contracts; a failing handler answers with the error header', async () => {
  const prefix = 't' + randomBytes(5).toString('hex');
  const nc = await connect({ servers: NATS_URL, name: 'sdk-contract' });
  const subjects = topology(prefix).subjects.plugins;
  const beats: unknown[] = [];
  const sub = nc.subscribe(subjects.heartbeat, { callback: (_e, m) => void beats.push(JSON.parse(new TextDecoder().decode(m.data))) });
  await nc.flush();
  const plugin = await runPlugin({
    nc,
    prefix,
    name: 'sdk/contract',
    priority: 7,
    timeoutMs: 1_500,
    heartbeatMs: 500,
    onError: () => undefined,
    handlers: {
      PersonNormalMessageReceived: (ctx) => {
        if (ctx.event.text_message === 'fail') throw new Error('handler broke');
        ctx.alterUserMessage([{ type: 'text', text: 'x' }]);
        ctx.reply([{ type: 'Plain', text: 'r' }]);
        ctx.preventDefault();
        ctx.preventPostorder();
      },
      PromptPreProcessing: (ctx) => {
        ctx.event.default_prompt.push({ role: 'system', content: 'added' });
      },
    },
  });
  try {
    const deadline = Date.now() + 5_000;
    while (beats.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.ok(beats.length >= 2, 'it announces itself again');
    const reg = PluginRegistration.parse(beats[0]);
    assert.deepEqual([reg.name, reg.events, reg.priority, reg.timeoutMs, reg.ttlMs], ['sdk/contract', ['PersonNormalMessageReceived', 'PromptPreProcessing'], 7, 1_500, 1_500]);

    const call = async (event: PluginEventRequest['event']) => {
      const h = natsHeaders();
      h.set('traceparent', '00-0123456789abcdef0123456789abcdef-0123456789abcdef-01');
      return nc.request(subjects.call('sdk/contract'), encode({ v: 1, queryId: 'q', botId: 'b', pipelineId: 'p', event } satisfies PluginEventRequest), { timeout: 2_000, headers: h });
    };
    const normal = await call({ event_name: 'PersonNormalMessageReceived', launcher_type: 'person', launcher_id: 'u', sender_id: 'u', text_message: 'hi', message_chain: [{ type: 'Plain', text: 'hi' }] });
    assert.deepEqual(PluginEventReply.parse(JSON.parse(new TextDecoder().decode(normal.data))), {
      v: 1, prevent_default: true, prevent_postorder: true, reply_message_chain: [{ type: 'Plain', text: 'r' }], user_message_alter: [{ type: 'text', text: 'x' }],
    });
    const prompt = await call({ event_name: 'PromptPreProcessing', session_name: 'person_u', default_prompt: [], prompt: [{ role: 'user', content: 'old' }] });
    const promptReply = PluginEventReply.parse(JSON.parse(new TextDecoder().decode(prompt.data)));
    assert.deepEqual([promptReply.default_prompt, promptReply.prompt], [[{ role: 'system', content: 'added' }], [{ role: 'user', content: 'old' }]]);

    const failed = await call({ event_name: 'PersonNormalMessageReceived', launcher_type: 'person', launcher_id: 'u', sender_id: 'u', text_message: 'fail', message_chain: [] });
    assert.equal(failed.headers?.get(HEADERS.pluginError), 'handler broke');
  } finally {
    sub.unsubscribe();
    await plugin.stop();
    await nc.drain();
  }
});
