import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createCanvas, loadImage } from '@napi-rs/canvas';
import { packagedFontPath, PNG_LIMITS, pngRenderer, RenderCapacityError, renderTextPng, wrapLines } from './render-png.js';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function ihdr(png: Buffer): { width: number; height: number } {
  assert.deepEqual(png.subarray(0, 8), PNG_SIGNATURE, 'PNG signature');
  assert.equal(png.toString('latin1', 12, 16), 'IHDR', 'first chunk is IHDR');
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

/** Decodes the PNG and counts pixels darker than mid-grey. */
async function darkPixels(png: Buffer): Promise<number> {
  const img = await loadImage(png);
  const ctx = createCanvas(img.width, img.height).getContext('2d');
  ctx.drawImage(img, 0, 0);
  const d = ctx.getImageData(0, 0, img.width, img.height).data;
  let n = 0;
  for (let i = 0; i < d.length; i += 4) if (d[i] < 128 && d[i + 3] > 0) n++;
  return n;
}

const tenPx = (s: string) => Array.from(s).length * 10;

test('wrapLines: measured width, tabs, empty lines, digit runs, code points, line cap', () => {
  assert.deepEqual(wrapLines('abcdefghijkl', tenPx, 50, 10), ['abcde', 'fghij', 'kl']);
  assert.deepEqual(wrapLines('a\tb', tenPx, 100, 10), ['a    b'], 'a tab is four spaces');
  assert.deepEqual(wrapLines('a\r\n\nb\n', tenPx, 100, 10), ['a', '', 'b', ''], 'empty lines stay');
  assert.deepEqual(wrapLines('ab12345', tenPx, 40, 10), ['ab', '1234', '5'], 'a break moves before a digit run unless the run starts the line');
  assert.deepEqual(wrapLines('abc 99x', tenPx, 50, 10), ['abc ', '99x']);
  assert.deepEqual(wrapLines('😀😀😀', tenPx, 20, 10), ['😀😀', '😀'], 'surrogate pairs stay whole');
  assert.deepEqual(wrapLines('WWW', () => 1000, 50, 10), ['W', 'W', 'W'], 'a glyph wider than the area still advances');
  assert.equal(wrapLines('a\n'.repeat(10), tenPx, 50, 10), null, '11 lines (the last one empty) are over a cap of 10');
  assert.equal(wrapLines('a\n'.repeat(9), tenPx, 50, 10)?.length, 10);

  let measured = 0;
  const counting = (s: string) => (measured++, tenPx(s));
  assert.equal(wrapLines('x'.repeat(100_000), counting, 720, 256), null);
  assert.ok(measured < 256 * 20, `a huge line stops at the cap after few measurements (${measured})`);
});

test('renderTextPng: a valid PNG 800 px wide whose height and size grow with the text', async () => {
  const short = await renderTextPng('hello');
  assert.deepEqual(ihdr(short), { width: 800, height: 280 }, 'minimum height 280');
  const lines = Array.from({ length: 40 }, (_, i) => `line ${i}`).join('\n');
  const tall = await renderTextPng(lines);
  assert.deepEqual(ihdr(tall), { width: 800, height: 40 * 35 + 65 });
  assert.ok(tall.length > short.length, 'more text, more bytes');
  const wrapped = ihdr(await renderTextPng('很长的句子'.repeat(60)));
  assert.ok(wrapped.height > 280, `300 CJK characters wrap onto more than 6 lines (${wrapped.height})`);
  const full = ihdr(await renderTextPng('z\n'.repeat(PNG_LIMITS.maxLines - 1)));
  assert.equal(full.height, PNG_LIMITS.maxLines * 35 + 65);
  assert.ok(full.width * full.height <= PNG_LIMITS.maxPixels);
});

test('renderTextPng: Chinese renders with the packaged font, not blank and not tofu', async () => {
  const blank = await darkPixels(await renderTextPng('    '));
  const zh = await darkPixels(await renderTextPng('你好世界，长文本转图片'));
  assert.equal(blank, 0, 'spaces draw nothing');
  assert.ok(zh > 500, `Chinese draws glyphs (${zh} dark pixels)`);
  const a = await renderTextPng('山水风景');
  const b = await renderTextPng('你好世界');
  assert.notDeepEqual(a, b, 'different characters draw differently (missing glyphs would all be the same box)');
  assert.match(packagedFontPath(), /NotoSansHans-Regular\.otf$/);
});

test('renderTextPng: font-path picks the font; an unreadable font is an error, not a forward', async () => {
  const bold = packagedFontPath().replace('Regular', 'Bold');
  const text = '粗体和常规字重不一样';
  const regular = await darkPixels(await renderTextPng(text));
  const heavy = await darkPixels(await renderTextPng(text, bold));
  assert.ok(heavy > regular * 1.1, `the bold font-path draws more ink (${heavy} vs ${regular})`);
  const junk = path.join(mkdtempSync(path.join(tmpdir(), 'lt-font-')), 'junk.ttf');
  writeFileSync(junk, 'not a font');
  await assert.rejects(renderTextPng('x', junk), (e: Error) => !(e instanceof RenderCapacityError) && /cannot load/.test(e.message));
  await assert.rejects(pngRenderer.render('x', junk), /cannot load/);
});

test('pngRenderer: raw base64 PNG; null past the line and character limits', async () => {
  const b64 = await pngRenderer.render('hello 你好', '');
  assert.ok(b64 && !b64.startsWith('data:'), 'no data: prefix');
  ihdr(Buffer.from(b64, 'base64'));
  assert.equal(await pngRenderer.render('a\n'.repeat(PNG_LIMITS.maxLines), ''), null, '257 lines');
  assert.equal(await pngRenderer.render('长'.repeat(22 * 300), ''), null, 'about 300 wrapped lines');
  assert.equal(await pngRenderer.render('x'.repeat(PNG_LIMITS.maxChars + 1), ''), null);
  await assert.rejects(renderTextPng('a\n'.repeat(PNG_LIMITS.maxLines)), RenderCapacityError);
  const all = await Promise.all(Array.from({ length: 5 }, (_, i) => renderTextPng(`concurrent ${i}`)));
  assert.equal(all.length, 5, 'renders queue behind the concurrency limit and all finish');
});
