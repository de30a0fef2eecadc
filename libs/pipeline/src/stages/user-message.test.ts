import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { MessageComponent } from '@conveyor/contracts';
import { buildUserMessage } from './user-message.js';

const voice = (o: { base64?: string; url?: string }): MessageComponent => ({ type: 'Voice', voice_id: '', url: o.url ?? '', path: '', base64: o.base64 ?? '', length: 3 });
const file = (name: string, o: { base64?: string; url?: string }): MessageComponent => ({ type: 'File', id: 'f1', name, size: 10, url: o.url ?? '', path: '', base64: o.base64 ?? '' });
const image = (o: { base64?: string; url?: string }): MessageComponent => ({ type: 'Image', image_id: '', url: o.url ?? '', path: '', base64: o.base64 ?? '' });
const plain = (text: string): MessageComponent => ({ type: 'Plain', text });

test('a vision model gets the image as an image_url part: base64 as a data URL, else the platform URL', () => {
  const { message } = buildUserMessage([plain('look'), image({ base64: 'iVBORw0KGgo=' }), image({ url: 'https://img.example/a.png' }), image({ base64: 'data:image/jpeg;base64,/9j/' })], { vision: true, combineQuote: true });
  assert.deepEqual(message.content, [
    { type: 'text', text: 'look' },
    { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
    { type: 'image_url', image_url: { url: 'https://img.example/a.png' } },
    { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/' } },
  ]);
});

test('a text-only model gets the text alone; an image without data is no part', () => {
  assert.deepEqual(buildUserMessage([plain('look'), image({ url: 'https://img.example/a.png' })], { vision: false, combineQuote: true }).message.content, 'look');
  assert.deepEqual(buildUserMessage([plain('look'), image({})], { vision: true, combineQuote: true }).message.content, 'look');
});

test('voice and file parts are named in text with LangBot element names, never sent as bytes or URLs', () => {
  const { message, text } = buildUserMessage(
    [plain('here'), voice({ base64: 'AAAA' }), voice({ url: 'https://cdn.example/v?token=secret' }), file('report.pdf', { url: 'https://cdn.example/f?token=secret' }), file('notes.txt', { base64: 'aGk=' }), file('empty.bin', {})],
    { vision: true, combineQuote: true },
  );
  assert.deepEqual(message.content, [
    { type: 'text', text: 'here' },
    { type: 'text', text: '[File](voice.silk)' },
    { type: 'text', text: '[File](voice)' },
    { type: 'text', text: '[File](report.pdf)' },
    { type: 'text', text: '[File](notes.txt)' },
  ]);
  assert.equal(text, 'here', 'user_message_text holds the Plain text only');
  assert.doesNotMatch(JSON.stringify(message), /secret|AAAA|aGk=/);
});

test('quoted attachments follow the same rules when quotes are combined, and are left out otherwise', () => {
  const quote: MessageComponent = { type: 'Quote', id: 1, group_id: null, sender_id: null, target_id: null, origin: [plain('old'), file('a.doc', { url: 'https://x/a' }), image({ url: 'https://x/i.png' })] };
  assert.deepEqual(buildUserMessage([quote, plain('new')], { vision: false, combineQuote: true }).message.content, [
    { type: 'text', text: 'old' },
    { type: 'text', text: '[File](a.doc)' },
    { type: 'text', text: 'new' },
  ]);
  assert.equal(buildUserMessage([quote, plain('new')], { vision: true, combineQuote: false }).message.content, 'new');
});
