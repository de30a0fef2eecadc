import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { topology, type TakeoverEvent } from '@conveyor/contracts';
import { useTempDatabase } from '@conveyor/persistence/testing';
import { TakeoverDirectory, type TakeoverRows } from './takeover-directory.js';

const database = useTempDatabase();
let nc: NatsConnection;
const quiet = { warn: () => undefined, info: () => undefined };

before(async () => {
  nc = await connect({ servers: process.env.NATS_URL || 'nats://127.0.0.1:4222' });
});
after(async () => {
  await nc?.drain();
});

const chat = (launcherId: string) => ({ botId: 'b1', launcherType: 'person' as const, launcherId });

test('taken chats come from Postgres at start and from events after; idle ones count as returned; a hand-back frees one', async () => {
  const prefix = `t${randomUUID().slice(0, 8)}`;
  let now = Date.parse('2026-12-07T10:00:00Z');
  await database().prisma.sessionTakeover.create({ data: { ...chat('stored'), operator: 'user:ann', since: new Date(now), lastOperatorAt: new Date(now), idleMs: 60_000 } });
  const directory = new TakeoverDirectory(database().prisma, nc, prefix, quiet, () => now);
  await directory.start();
  try {
    assert.equal(directory.isTakenOver(chat('stored')), true, 'read at start');
    assert.equal(directory.isTakenOver(chat('other')), false);
    const publish = (e: Omit<TakeoverEvent, 'v'>) => nc.publish(topology(prefix).subjects.takeoverEvents, JSON.stringify({ v: 1, ...e }));
    publish({ kind: 'taken', chat: chat('live'), operator: 'user:bo', at: new Date(now).toISOString(), idleMs: null });
    await nc.flush();
    await waitFor(() => directory.isTakenOver(chat('live')));
    now += 60_000;
    assert.equal(directory.isTakenOver(chat('stored')), false, 'silent past its idle time');
    publish({ kind: 'reply', chat: chat('stored'), operator: 'user:ann', at: new Date(now).toISOString() });
    await nc.flush();
    await waitFor(() => directory.isTakenOver(chat('stored')));
    // A chat asking for a person stays the bot's: only an operator's takeover takes it.
    publish({ kind: 'requested', chat: chat('asking'), operator: 'bot', at: new Date(now).toISOString(), via: 'keyword', text: 'human' });
    publish({ kind: 'returned', chat: chat('live'), operator: 'user:bo', at: new Date(now).toISOString() });
    nc.publish(topology(prefix).subjects.takeoverEvents, 'not json');
    await nc.flush();
    await waitFor(() => !directory.isTakenOver(chat('live')));
    assert.equal(directory.isTakenOver(chat('asking')), false, 'heard before the hand-back, and not taken');
  } finally {
    directory.stop();
  }
});

test('an event heard while a resync reads Postgres is not lost to the older read', async () => {
  const prefix = `t${randomUUID().slice(0, 8)}`;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  // Postgres itself, answering only once the event below was heard.
  const slow: TakeoverRows = {
    sessionTakeover: {
      findMany: async (args) => {
        await gate;
        return database().prisma.sessionTakeover.findMany(args);
      },
    },
  };
  const directory = new TakeoverDirectory(slow, nc, prefix, quiet);
  const resync = directory.resync();
  directory.apply({ v: 1, kind: 'taken', chat: chat('during'), operator: 'user:ann', at: new Date().toISOString(), idleMs: null });
  release();
  await resync;
  assert.equal(directory.isTakenOver(chat('during')), true);
});

async function waitFor(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}
