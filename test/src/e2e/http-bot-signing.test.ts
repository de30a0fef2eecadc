import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HttpBotError, sign } from '@conveyor/http-bot';
import { addBot, startTestSystem, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';
import { uniqueName } from '../harness/ids.js';

/**
 * The ingress never verifies an HTTP-bot request against the empty key (which anybody can sign
 * with), and takes unsigned requests only from a bot configured with an explicit
 * `signature_required: false`, saying so in its log.
 */
describe('HTTP-bot signing at the ingress', () => {
  let sys: TestSystem;

  before(async () => {
    sys = await startTestSystem({ startServices: false });
    await sys.services.start('ingress');
  });

  after(async () => {
    await sys?.stop();
  });

  const post = (botId: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${sys.services.get('ingress').url}/bots/${botId}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const signedWith = (secret: string, body: unknown) => {
    const ts = String(Math.floor(Date.now() / 1000));
    return { 'x-lb-timestamp': ts, 'x-lb-signature': sign(secret, ts, JSON.stringify(body)) };
  };
  const message = (session: string) => ({ session_id: session, message: [{ type: 'Plain', text: 'hi' }] });

  test('a stored bot with an empty inbound_secret refuses every request, even one signed with the empty key', async () => {
    // Written straight to the database, as a row stored before such settings were refused.
    const botId = await addBot(sys, uniqueName('keyless'), 'http-bot', { inbound_secret: '', callback_url: 'http://127.0.0.1:9/cb' });
    const body = message(uniqueName('s'));
    for (const headers of [signedWith('', body), {}]) {
      const res = await post(botId, body, headers);
      assert.equal(res.status, HttpBotError.misconfigured().status);
      assert.deepEqual(await res.json(), HttpBotError.misconfigured().body);
    }
    const logs = sys.services.get('ingress').logs;
    const line = await waitUntil('the misconfiguration logged', () => logs.find((l) => l.includes(botId) && l.includes('misconfigured')));
    assert.match(line, /inbound_secret/);
    assert.equal(logs.filter((l) => l.includes(botId) && l.includes('misconfigured')).length, 1, 'reported once per loaded row, not per request');
  });

  test('a signature_required that is merely falsy (null) is refused too, not read as "off"', async () => {
    const botId = await addBot(sys, uniqueName('nullflag'), 'http-bot', { inbound_secret: 's', callback_url: 'http://127.0.0.1:9/cb' });
    // addBot takes strings and booleans; the null arrives the way a YAML key left empty would.
    const { createPrismaClient } = await import('@conveyor/persistence');
    const prisma = createPrismaClient(sys.db.url);
    try {
      await prisma.bot.update({ where: { id: botId }, data: { adapterConfig: { inbound_secret: 's', signature_required: null } } });
    } finally {
      await prisma.$disconnect();
    }
    const res = await post(botId, message(uniqueName('s')));
    assert.equal(res.status, HttpBotError.misconfigured().status);
    assert.deepEqual(await res.json(), HttpBotError.misconfigured().body);
  });

  test('signature_required: false accepts unsigned requests and logs a warning naming the bot', async () => {
    const botId = await addBot(sys, uniqueName('unsigned'), 'http-bot', { signature_required: false, callback_url: 'http://127.0.0.1:9/cb' });
    const res = await post(botId, message(uniqueName('s')));
    assert.equal(res.status, 202);
    const logs = sys.services.get('ingress').logs;
    const line = await waitUntil('the unsigned warning', () => logs.find((l) => l.includes(botId) && l.includes('unsigned')));
    const entry = JSON.parse(line) as { level: number | string; msg: string };
    assert.ok(entry.level === 40 || entry.level === 'warn', `a warning: ${line}`);
  });

  test('the system\'s signed bot is unchanged: a wrong key is refused, the right one accepted', async () => {
    const body = message(uniqueName('s'));
    const wrong = await post(sys.botId, body, signedWith('', body));
    assert.equal(wrong.status, 401);
    assert.deepEqual(await wrong.json(), HttpBotError.invalidSignature('signature_mismatch').body);
    const right = await post(sys.botId, body, signedWith(sys.inboundSecret, body));
    assert.equal(right.status, 202);
  });
});
