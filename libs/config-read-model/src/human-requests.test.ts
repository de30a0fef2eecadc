import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { HumanHandoff, TakeoverEvent, topology } from '@conveyor/contracts';
import { useTempDatabase } from '@conveyor/persistence/testing';
import { HumanRequests } from './human-requests.js';

const database = useTempDatabase();
let nc: NatsConnection;
let receiver: Server;
let receiverUrl = '';
const received: Array<{ url: string; body: unknown }> = [];
let status = 200;

before(async () => {
  nc = await connect({ servers: process.env.NATS_URL || 'nats://127.0.0.1:4222' });
  receiver = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push({ url: req.url ?? '', body: JSON.parse(body) });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const address = receiver.address();
  receiverUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});
after(async () => {
  await nc?.drain();
  await new Promise((resolve) => receiver?.close(resolve));
});

async function waitFor(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in 30 s');
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('a chat starts waiting once: one row, one announcement, one webhook call, however often it asks', async () => {
  const prefix = `t${randomUUID().slice(0, 8)}`;
  const heard: TakeoverEvent[] = [];
  const sub = nc.subscribe(topology(prefix).subjects.takeoverEvents, { callback: (_err, msg) => void heard.push(TakeoverEvent.parse(msg.json())) });
  await nc.flush();
  const warnings: object[] = [];
  const requests = new HumanRequests(database().prisma, nc, prefix, { info: () => undefined, warn: (o) => warnings.push(o) });
  const settings = HumanHandoff.parse({ keywords: ['human'], webhookUrl: `${receiverUrl}/hook?token=abc` });
  const chat = { botId: 'b1', launcherType: 'person' as const, launcherId: randomUUID() };
  try {
    assert.equal(await requests.request({ chat, via: 'keyword', reason: 'human', queryId: randomUUID(), settings }), true);
    assert.equal(await requests.request({ chat, via: 'tool', reason: 'x'.repeat(5_000), queryId: randomUUID(), settings }), false, 'already waiting');
    await waitFor(() => received.some((r) => (r.body as { launcherId: string }).launcherId === chat.launcherId));
    await waitFor(() => heard.length >= 1);
    const row = await database().prisma.humanRequest.findUniqueOrThrow({ where: { botId_launcherType_launcherId: chat } });
    assert.equal(row.via, 'keyword');
    assert.equal(heard.length, 1);
    assert.equal(heard[0]?.kind, 'requested');
    assert.equal(heard[0]?.via, 'keyword');
    assert.equal(received.filter((r) => (r.body as { launcherId: string }).launcherId === chat.launcherId).length, 1);
    assert.equal(received.at(-1)?.url, '/hook?token=abc');

    // A failing receiver: tried twice, logged by origin only (the token stays out of the log).
    status = 500;
    const other = { ...chat, launcherId: randomUUID() };
    const before = received.length;
    await requests.request({ chat: other, via: 'tool', reason: 'long '.repeat(400), queryId: randomUUID(), settings });
    await waitFor(() => warnings.length === 1);
    assert.equal(received.length - before, 2);
    assert.ok(!JSON.stringify(warnings).includes('token=abc'));
    const stored = await database().prisma.humanRequest.findUniqueOrThrow({ where: { botId_launcherType_launcherId: other } });
    assert.equal(stored.reason.length, 1_000, 'the reason is cut');
  } finally {
    status = 200;
    sub.unsubscribe();
  }
});
