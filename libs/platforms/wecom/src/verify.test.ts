import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createCipheriv, createHash } from 'node:crypto';
import { decryptWecom, encryptWecom, verifyWecomSignature, wecomSignature } from './verify.js';

// The sample of WeCom's callback documentation (corp, token, key, a URL check and a message callback).
const CORP = 'wx5823bf96d3bd56c7';
const TOKEN = 'QDG6eK';
const KEY = 'jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C';
const ECHOSTR = 'P9nAzCzyDtyTWESHep1vC5X9xho/qYX3Zpb4yKa9SKld1DsH3Iyt3tP3zNdtp+4RPcs8TgAE7OaBO+FZXvnaqQ==';
const POST_ENCRYPT =
  'RypEvHKD8QQKFhvQ6QleEB4J58tiPdvo+rtK1I9qca6aM/wvqnLSV5zEPeusUiX5L5X/0lWfrf0QADHHhGd3QczcdCUpj911L3vg3W/sYYvuJTs3TUUkSUXxaccAS0qhxchrRYt66wiSpGLYL42aM6A8dTT+6k4aSknmPj48kzJs8qLjvd4Xgpue06DOdnLxAUHzM6+kDZ+HMZfJYuR+LtwGc2hgf5gsijff0ekUNXZiqATP7PF5mZxZ3Izoun1s4zG4LUMnvw2r+KqCKIw+3IQH03v+BCA9nMELNqbSf6tiWSrXJB3LAVGUcallcrw8V2t9EL4EhzJWrQUax5wLVMNS0+rUPA3k22Ncx4XXZS9o0MBH27Bo6BpNelZpS+/uh9KsNlY6bHCmJU9p8g7m3fVKn28H3KDYA5Pl/T8Z1ptDAVe0lXdQ2YoyyH2uyPIGHBZZIs2pDBS8R07+qN+E7Q==';

test('the documentation sample: the URL check signature holds and its echostr decrypts', () => {
  assert.equal(wecomSignature(TOKEN, '1409659589', '263014780', ECHOSTR), '5c45ff5e21c57e6ad56bac8758b79b1d9ac89fd3');
  assert.equal(verifyWecomSignature(TOKEN, '1409659589', '263014780', ECHOSTR, '5c45ff5e21c57e6ad56bac8758b79b1d9ac89fd3'), true);
  assert.deepEqual(decryptWecom(KEY, ECHOSTR, CORP), { ok: true, message: '1616140317555161061' });
});

test('the documentation sample: the message callback signature holds and its message decrypts for the corp', () => {
  assert.equal(verifyWecomSignature(TOKEN, '1409659813', '1372623149', POST_ENCRYPT, '477715d11cdb4164915debcba66cb864d751f3e6'), true);
  assert.equal(verifyWecomSignature(TOKEN, '1409659813', '1372623150', POST_ENCRYPT, '477715d11cdb4164915debcba66cb864d751f3e6'), false);
  assert.equal(verifyWecomSignature('other', '1409659813', '1372623149', POST_ENCRYPT, '477715d11cdb4164915debcba66cb864d751f3e6'), false);
  assert.equal(verifyWecomSignature(TOKEN, '1409659813', '1372623149', POST_ENCRYPT, undefined), false);
  const r = decryptWecom(KEY, POST_ENCRYPT, CORP);
  assert.ok(r.ok);
  if (r.ok) {
    assert.match(r.message, /^<xml>/);
    assert.match(r.message, /<ToUserName><!\[CDATA\[wx5823bf96d3bd56c7\]\]><\/ToUserName>/);
  }
});

test('a ciphertext built with node:crypto from the documented layout decrypts; the encryptor builds the same bytes', () => {
  const key = Buffer.from(`${KEY}=`, 'base64');
  const random = Buffer.from('0123456789abcdef');
  const message = '<xml><Content><![CDATA[你好]]></Content></xml>';
  const body = Buffer.from(message);
  const len = Buffer.from([0, 0, (body.length >> 8) & 0xff, body.length & 0xff]);
  const content = Buffer.concat([random, len, body, Buffer.from(CORP)]);
  const pad = 32 - (content.length % 32);
  const c = createCipheriv('aes-256-cbc', key, key.subarray(0, 16));
  c.setAutoPadding(false);
  const independent = Buffer.concat([c.update(Buffer.concat([content, Buffer.alloc(pad, pad)])), c.final()]).toString('base64');
  assert.equal(encryptWecom(KEY, message, CORP, random), independent);
  assert.deepEqual(decryptWecom(KEY, independent, CORP), { ok: true, message });
  const sig = createHash('sha1').update(['t', '1', 'n', independent].sort().join('')).digest('hex');
  assert.equal(wecomSignature('t', '1', 'n', independent), sig);
});

test('another corp id, another key, or garbage is refused with a code and a reason', () => {
  const enc = encryptWecom(KEY, '<xml/>', CORP);
  assert.deepEqual(decryptWecom(KEY, enc, 'ww-other'), { ok: false, code: 'wrong_receiver', reason: 'the message is encrypted for another corp id' });
  const otherKey = 'abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG';
  const wrongKey = decryptWecom(otherKey, enc, CORP);
  assert.equal(wrongKey.ok, false);
  if (!wrongKey.ok) assert.equal(wrongKey.code, 'undecryptable');
  for (const bad of ['', 'not base64!', 'AAAA', Buffer.alloc(32).toString('base64')]) {
    const r = decryptWecom(KEY, bad, CORP);
    assert.equal(r.ok, false, bad);
    if (!r.ok) assert.equal(r.code, 'undecryptable');
  }
});
