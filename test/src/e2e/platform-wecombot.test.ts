import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { addBot, NATS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { newEncodingAesKey, readWecomBotStream, refreshWecomBotStream, sendWecomBotCallback, sendWecomBotUrlCheck, wecomBotTextMessage, type WecomBotCredentials } from '../fakes/index.js';
import { uniqueName } from '../harness/ids.js';

/**
 * A WeCom AI bot (智能机器人) in webhook mode through all four services at `/bots/{bot_id}`: the URL
 * check; a member's text answered at once with the start of a stream, whose refresh callbacks show
 * the reply growing until it is finished; a group message (the bot mentioned) answered in its chat;
 * WeCom's retry of a message gets the same stream and one query; refused callbacks publish nothing.
 */
describe('WeCom AI bot at /bots/{bot_id}', () => {
  let sys: TestSystem;
  let nc: NatsConnection;
  let url: string;
  const creds: WecomBotCredentials = { token: uniqueName('bot-token').replace(/[^A-Za-z0-9]/g, ''), encodingAesKey: newEncodingAesKey() };
  const aibotid = `aib${uniqueName('bot').replace(/[^A-Za-z0-9]/g, '')}`;
  const botId = randomUUID();

  const lastQuerySeq = async () => (await (await jetstreamManager(nc)).streams.info(sys.topology.streams.queries.name)).state.last_seq;

  before(async () => {
    sys = await startTestSystem();
    nc = await connect({ servers: NATS_URL });
    await addBot(sys, 'WeCom AI bot', 'wecombot', { Token: creds.token, EncodingAESKey: creds.encodingAesKey, BotId: aibotid, robot_name: 'Conveyor' }, botId);
    url = `${sys.services.get('ingress').url}/bots/${botId}`;
  });

  after(async () => {
    await nc?.close();
    await sys?.stop();
  });

  test('the URL check: the signed echostr is decrypted for the empty receiver id', async () => {
    const res = await sendWecomBotUrlCheck(url, creds, '4129571352');
    assert.equal(res.status, 200);
    assert.equal(await res.text(), '4129571352');
  });

  test('a single chat\'s text: a stream starts at once, its refreshes show the reply growing until finished; a retry gets the same stream', async () => {
    const words = Array.from({ length: 12 }, (_, i) => `word${i}`);
    // The model's stream stays open after its whole text until a refresh has shown the reply unfinished.
    let written = 0;
    sys.llm.setDefault({ text: words.join(' '), tickMs: 20, holdOpen: true, onDelta: (i) => { written = i; } });
    const userId = uniqueName('u').replace(/[^\w]/g, '');
    const message = wecomBotTextMessage({ aibotid, userId, content: 'tell me' });
    const started = await readWecomBotStream(await sendWecomBotCallback(url, creds, message), creds);
    assert.deepEqual({ finish: started.finish, content: started.content }, { finish: false, content: '' });
    assert.match(started.id, /^[0-9a-f]{32}$/);
    const before = await lastQuerySeq();
    const retried = await readWecomBotStream(await sendWecomBotCallback(url, creds, message), creds);
    assert.equal(retried.id, started.id, 'WeCom\'s retry of the message gets the same stream');
    const seen = await refreshWecomBotStream(url, creds, { aibotid, userId, streamId: started.id }, {
      intervalMs: 100,
      timeoutMs: 60_000,
      onRefresh: (s) => { if (!s.finish && s.content !== '' && written === words.length) sys.llm.release(); },
    });
    const last = seen.at(-1);
    assert.equal(last?.finish, true);
    assert.equal(last?.content, words.join(' '));
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i]!.content.startsWith(seen[i - 1]!.content), 'the content only grows');
    assert.ok(seen.some((s) => !s.finish && s.content !== ''), `a refresh saw the reply part-way (${seen.map((s) => s.content.split(' ').length).join(',')})`);
    assert.equal(await lastQuerySeq(), before, 'the retry made no second query');
  });

  test('a group message mentioning the bot is answered in its chat', async () => {
    const answer = `group answer ${uniqueName('g')}`;
    sys.llm.setDefault({ text: answer });
    const userId = uniqueName('u').replace(/[^\w]/g, '');
    const chatId = uniqueName('chat').replace(/[^\w]/g, '');
    const started = await readWecomBotStream(await sendWecomBotCallback(url, creds, wecomBotTextMessage({ aibotid, userId, chatId, content: '@Conveyor hello' })), creds);
    const seen = await refreshWecomBotStream(url, creds, { aibotid, userId, chatId, streamId: started.id }, { intervalMs: 100 });
    assert.equal(seen.at(-1)?.content, answer);
    const prompt = JSON.stringify(sys.llm.requests.at(-1)?.body.messages ?? []);
    assert.match(prompt, /hello/);
    assert.doesNotMatch(prompt, /@Conveyor/, 'the mention is taken out of the text');
  });

  test('refused before parsing: bad signature 401, another receiver or key 400, bad JSON 400, another aibotid 400; nothing published', async () => {
    const before = await lastQuerySeq();
    const msg = wecomBotTextMessage({ aibotid, userId: 'mallory', content: 'x' });
    assert.equal((await sendWecomBotCallback(url, creds, msg, { signature: '0'.repeat(40) })).status, 401);
    assert.equal((await sendWecomBotCallback(url, { ...creds, token: 'other' }, msg)).status, 401);
    const otherReceiver = await sendWecomBotCallback(url, creds, msg, { receiverId: 'ww-someone' });
    assert.equal(otherReceiver.status, 400);
    assert.match(await otherReceiver.text(), /^bad receiver id/);
    const otherKey = await sendWecomBotCallback(url, { ...creds, encodingAesKey: newEncodingAesKey() }, msg);
    assert.equal(otherKey.status, 400);
    const notJson = await sendWecomBotCallback(url, creds, msg, { rawBody: '<xml/>' });
    assert.equal(notJson.status, 400);
    const noSender = await sendWecomBotCallback(url, creds, { ...msg, from: undefined });
    assert.equal(noSender.status, 400);
    assert.match(await noSender.text(), /^malformed message: from/);
    const otherBot = await sendWecomBotCallback(url, creds, wecomBotTextMessage({ aibotid: 'aib-other', userId: 'u', content: 'x' }));
    assert.equal(otherBot.status, 400);
    const image = await sendWecomBotCallback(url, creds, { ...msg, msgtype: 'image', image: { url: 'https://x' } });
    assert.equal(image.status, 200);
    assert.equal(await lastQuerySeq(), before, 'no query was published');
  });
});
