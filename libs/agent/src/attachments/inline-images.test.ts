import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LlmMessage } from '@conveyor/contracts';
import { ImageFetchError, type FetchedImage } from './image-fetch.js';
import { inlineImages, type ImageSource } from './inline-images.js';

function source(answers: Record<string, FetchedImage | ImageFetchError>): ImageSource & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    async fetch(url) {
      asked.push(url);
      const a = answers[url];
      if (a === undefined) throw new ImageFetchError('http_status', 'HTTP 404');
      if (a instanceof ImageFetchError) throw a;
      return a;
    },
  };
}

function logger() {
  const lines: { obj: Record<string, unknown>; msg: string }[] = [];
  return { lines, warn: (obj: object, msg: string) => void lines.push({ obj: obj as Record<string, unknown>, msg }) };
}

const red: FetchedImage = { dataUrl: 'data:image/png;base64,iVBO', contentType: 'image/png', bytes: 4 };

test('image URLs are replaced by data URLs; an unreadable one is left out and the rest of the message kept', async () => {
  const log = logger();
  const messages: LlmMessage[] = [
    { role: 'system', content: 'be brief' },
    { role: 'user', content: [{ type: 'text', text: 'what is this' }, { type: 'image_url', image_url: { url: 'https://img.example/red.png' } }, { type: 'image_url', image_url: { url: 'https://img.example/gone.png?sig=secret' } }] },
  ];
  const out = await inlineImages(messages, { source: source({ 'https://img.example/red.png': red }), maxImages: 4, logger: log, queryId: 'q1' });
  assert.deepEqual(out[1].content, [{ type: 'text', text: 'what is this' }, { type: 'image_url', image_url: { url: red.dataUrl } }]);
  assert.equal(out[0], messages[0]);
  assert.deepEqual(messages[1].content, [{ type: 'text', text: 'what is this' }, { type: 'image_url', image_url: { url: 'https://img.example/red.png' } }, { type: 'image_url', image_url: { url: 'https://img.example/gone.png?sig=secret' } }], 'the input (history) keeps the URLs');
  assert.equal(log.lines.length, 1);
  assert.deepEqual(log.lines[0].obj, { queryId: 'q1', url: 'https://img.example/gone.png', reason: 'http_status', detail: 'HTTP 404' });
});

test('a message of one unreadable image becomes empty text, not an empty part list', async () => {
  const out = await inlineImages([{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://img.example/x.png' } }] }], { source: source({}), maxImages: 4, logger: logger() });
  assert.equal(out[0].content, '');
});

test('only the newest image URLs up to the bound are read; the same URL is read once', async () => {
  const log = logger();
  const src = source({ 'https://h/1.png': red, 'https://h/2.png': red, 'https://h/3.png': red });
  const img = (n: number) => ({ type: 'image_url' as const, image_url: { url: `https://h/${n}.png` } });
  const out = await inlineImages(
    [
      { role: 'user', content: [img(1)] },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: [img(2), img(3), img(3)] },
    ],
    { source: src, maxImages: 2, logger: log },
  );
  assert.deepEqual([...src.asked].sort(), ['https://h/2.png', 'https://h/3.png']);
  assert.equal(out[0].content, '', 'the oldest image was over the bound');
  assert.deepEqual(log.lines.map((l) => l.obj.reason), ['too_many_images']);
  assert.equal((out[2].content as unknown[]).length, 3);
});

test('data URLs pass when they are one of the image types; other data and schemes are left out', async () => {
  const log = logger();
  const out = await inlineImages(
    [{ role: 'user', content: [
      { type: 'image_url', image_url: { url: 'data:image/webp;base64,UklG' } },
      { type: 'image_url', image_url: { url: 'data:application/pdf;base64,JVBE' } },
      { type: 'image_url', image_url: { url: 'ftp://h/x.png' } },
    ] }],
    { source: source({}), maxImages: 4, logger: log },
  );
  assert.deepEqual(out[0].content, [{ type: 'image_url', image_url: { url: 'data:image/webp;base64,UklG' } }]);
  assert.deepEqual(log.lines.map((l) => l.obj.reason), ['wrong_type', 'bad_url']);
});

test('an abort of the run is not swallowed as an unreadable image', async () => {
  const aborting: ImageSource = { fetch: async () => { throw new DOMException('aborted', 'AbortError'); } };
  await assert.rejects(inlineImages([{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://h/1.png' } }] }], { source: aborting, maxImages: 4, logger: logger() }), { name: 'AbortError' });
});
