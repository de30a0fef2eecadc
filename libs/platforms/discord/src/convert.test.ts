import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chainToContent, DiscordMessage, messageToQuery } from './convert.js';
import { splitContent } from './rest.js';
import { parseDiscordConfig } from './config.js';

const BOT_USER = '900';
const msg = (over: Record<string, unknown>) => DiscordMessage.parse({
  id: '111', channel_id: '222', author: { id: '333', username: 'alice' }, content: '', timestamp: '2026-01-01T00:00:00.000Z', ...over,
});

test('a DM becomes a person query of the author; the message id is the reply target and the dedup id', () => {
  const q = messageToQuery(msg({ content: 'hi there' }), BOT_USER, 'bot-1', false);
  assert.equal(q.launcherType, 'person');
  assert.equal(q.sessionId, '333');
  assert.equal(q.senderName, 'alice');
  assert.equal(q.replyTo, '111');
  assert.equal(q.dedupId, '111');
  assert.deepEqual(q.messageChain, [{ type: 'Source', id: '111', timestamp: 1767225600 }, { type: 'Plain', text: 'hi there' }]);
});

test('a guild message is a group query of the channel; mentions become At (the bot\'s own → the bot id), images Image, files File', () => {
  const q = messageToQuery(msg({
    guild_id: '444', member: { nick: 'Ali' }, content: `<@${BOT_USER}> look <@!555> @everyone`,
    mentions: [{ id: BOT_USER, username: 'bot' }, { id: '555', username: 'bob' }],
    attachments: [{ id: '1', filename: 'cat.png', url: 'https://cdn/cat.png' }, { id: '2', filename: 'notes.txt', url: 'https://cdn/notes.txt', content_type: 'text/plain', size: 9 }],
  }), BOT_USER, 'bot-1', true, 'general');
  assert.equal(q.launcherType, 'group');
  assert.equal(q.groupName, 'general');
  assert.equal(q.sessionId, '222');
  assert.equal(q.senderName, 'Ali');
  assert.equal(q.stream, true);
  assert.deepEqual(q.messageChain.slice(1), [
    { type: 'At', target: 'bot-1', display: 'bot' },
    { type: 'Plain', text: ' look ' },
    { type: 'At', target: '555', display: 'bob' },
    { type: 'Plain', text: ' ' },
    { type: 'AtAll' },
    { type: 'Image', image_id: '1', url: 'https://cdn/cat.png', path: '', base64: '' },
    { type: 'File', id: '2', name: 'notes.txt', size: 9, url: 'https://cdn/notes.txt', path: '', base64: '' },
  ]);
});

test('a MESSAGE_CREATE without what a query needs is refused with the field named', () => {
  const r = DiscordMessage.safeParse({ id: '1', channel_id: '2', content: 'x' });
  assert.equal(r.success, false);
  assert.equal(r.error?.issues[0]?.path.join('.'), 'author');
});

test('a reply chain as content: text, mentions, images by URL; nothing to say is empty', () => {
  assert.equal(chainToContent([{ type: 'At', target: '5', display: '' }, { type: 'Plain', text: ' hi' }, { type: 'Image', image_id: '', url: 'https://x/y.png', path: '', base64: '' }]), '<@5> hi\nhttps://x/y.png\n');
  assert.equal(chainToContent([{ type: 'Source', id: 1, timestamp: 1 }, { type: 'Plain', text: '  ' }]), '');
});

test('text is split into messages of at most 2,000 characters, at line breaks or spaces where possible', () => {
  const words = Array.from({ length: 1000 }, (_, i) => `w${i}`).join(' ');
  const parts = splitContent(words);
  assert.ok(parts.length > 1 && parts.every((p) => p.length <= 2000));
  assert.equal(parts.join(' '), words);
  const solid = 'x'.repeat(4500);
  assert.deepEqual(splitContent(solid).map((p) => p.length), [2000, 2000, 500]);
  const emoji = '😀'.repeat(1500);
  assert.equal(splitContent(emoji).join(''), emoji, 'surrogate pairs stay whole');
  assert.deepEqual(splitContent(''), []);
});

test('settings: client_id and token required and named; defaults for the rest', () => {
  assert.throws(() => parseDiscordConfig({ token: 't' }), /client_id/);
  assert.throws(() => parseDiscordConfig({ client_id: '1' }), /token/);
  const c = parseDiscordConfig({ client_id: '1', token: 't' });
  assert.equal(c.api_base_url, 'https://discord.com/api/v10');
  assert.equal(c['enable-stream-reply'], false);
});
