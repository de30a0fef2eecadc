import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { hasPendingImages, IMAGE_PLACEHOLDER, imagePlaceholders, inlinedImage, MAX_IMAGES_PER_MESSAGE, MediaTooLargeError, pendingImage, readBoundedMedia, resolvePendingImages } from './media.js';

test('pending images are resolved in order, at most four; a failed one, one without an id and those past the bound are [Image]', async () => {
  const chain = [{ type: 'Plain' as const, text: 'look' }, pendingImage(''), ...['k1', 'bad', 'k3', 'k4', 'k5'].map(pendingImage)];
  assert.equal(hasPendingImages(chain), true);
  const asked: string[] = [];
  const reasons: string[] = [];
  const resolved = await resolvePendingImages(chain, async (image) => {
    asked.push(image.image_id);
    if (image.image_id === 'bad') throw new Error('HTTP 400 code 234003');
    return inlinedImage(image, { bytes: Buffer.from(image.image_id), contentType: 'image/gif' });
  }, (r) => reasons.push(r));
  assert.deepEqual(asked, ['k1', 'bad', 'k3', 'k4']);
  assert.deepEqual(reasons, ['HTTP 400 code 234003']);
  const gif = (k: string) => `data:image/gif;base64,${Buffer.from(k).toString('base64')}`;
  assert.deepEqual(resolved.map((c) => (c.type === 'Image' ? c.base64 : c.type === 'Plain' ? c.text : c.type)), ['look', '[Image]', gif('k1'), '[Image]', gif('k3'), gif('k4'), '[Image]']);
  assert.equal(hasPendingImages(resolved), false);
  assert.equal(MAX_IMAGES_PER_MESSAGE, 4);
  assert.deepEqual(imagePlaceholders(chain).map((c) => (c.type === 'Plain' ? c.text : c.type)), ['look', ...Array(6).fill(IMAGE_PLACEHOLDER)]);
});

test('an inlined image keeps its id; a content type that is no image\'s takes the fallback', () => {
  assert.deepEqual(inlinedImage(pendingImage('mxc://hs/a'), { bytes: Buffer.from('x'), contentType: 'application/octet-stream' }, 'image/jpeg'), { type: 'Image', image_id: 'mxc://hs/a', url: '', path: '', base64: 'data:image/jpeg;base64,eA==' });
  assert.equal(inlinedImage(pendingImage('a'), { bytes: Buffer.from('x'), contentType: 'image/webp' }).base64, 'data:image/webp;base64,eA==');
});

test('a bounded read takes a body up to its bound, refuses a declared length over it unread, and cuts one that grows past it', async () => {
  assert.deepEqual(await readBoundedMedia(Readable.from([Buffer.from('ab'), Buffer.from('cd')]), 4, '4'), Buffer.from('abcd'));
  const unread = Readable.from([Buffer.from('abcdef')]);
  await assert.rejects(readBoundedMedia(unread, 4, '6'), (err: unknown) => err instanceof MediaTooLargeError && err.code === 'MEDIA_TOO_LARGE' && err.message === 'a file of 6 bytes, over 4');
  assert.equal(unread.destroyed, true, 'the body was given back');
  const growing = Readable.from([Buffer.from('abc'), Buffer.from('def')]);
  await assert.rejects(readBoundedMedia(growing, 4, null), { message: 'a file over 4 bytes' });
  assert.equal(growing.destroyed, true);
  assert.deepEqual(await readBoundedMedia(null, 4), Buffer.alloc(0));
});
