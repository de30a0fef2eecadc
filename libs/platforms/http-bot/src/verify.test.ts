import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePythonTimestamp, sign, verifyInbound } from './verify.js';

const INBOUND = 'example-inbound-secret';
const OUTBOUND = 'example-outbound-secret';
const BODY_15_1 =
  '{"session_id":"ticket-10293","session_type":"person","sender":{"id":"user-5567","name":"Alice"},"message":[{"type":"Plain","text":"Export keeps failing on the dashboard."}]}';

test('the protocol\'s example inbound signature', () => {
  assert.equal(Buffer.byteLength(BODY_15_1), 173);
  assert.equal(
    sign(INBOUND, '1767225600', Buffer.from(BODY_15_1)),
    'sha256=b7e7d3e8b5e07dae9c9a676fcc968c106edcd977c2b5bd9f4269b4d24ed78af2',
  );
  // Re-serialized with Python's default separators, the digest no longer matches.
  const reserialized = JSON.stringify(JSON.parse(BODY_15_1)).replaceAll('":', '": ').replaceAll(',"', ', "');
  assert.ok(sign(INBOUND, '1767225600', Buffer.from(reserialized)).startsWith('sha256=6d9fee4f'));
});

test('the protocol\'s example reset signature', () => {
  assert.equal(
    sign(INBOUND, '1767225700', Buffer.from('{"session_id":"ticket-10293","session_type":"person"}')),
    'sha256=fa828480e14b21fcbbbb6cf899629206b8c6428c77ce8269414d887991618e93',
  );
});

test('the protocol\'s example callback signatures with the outbound secret', () => {
  const vectors: [string, string, string][] = [
    [
      '1767225603',
      '{"session_id": "ticket-10293", "reply_to": "in_3f2b8c1d9e7a4b6c8d0e1f2a3b4c5d6e", "sequence": 1, "is_final": true, "stream": false, "message": [{"type": "Plain", "text": "Please clear the export cache and try again."}], "timestamp": "2026-01-01T08:00:03.512337"}',
      'd1953775e1fa02d9519c512f8b48dd355d222fc8202ad644ba83049ebc8315da',
    ],
    [
      '1767225601',
      '{"session_id": "ticket-10293", "reply_to": "in_3f2b8c1d9e7a4b6c8d0e1f2a3b4c5d6e", "sequence": 1, "is_final": false, "stream": true, "message": [{"type": "Plain", "text": "Let me check"}], "timestamp": "2026-01-01T08:00:01.104211"}',
      '04080a2f01dc729ac67eaab8854cc02b2e46f824423c7566a1dece8db75f2ae4',
    ],
    [
      '1767225660',
      '{"session_id": "ticket-10293", "reply_to": "in_9a8b7c6d5e4f40312a1b2c3d4e5f6a7b", "sequence": 1, "is_final": true, "stream": false, "message": [{"type": "Plain", "text": "请求数超过限速器设定值，已丢弃本消息。"}], "timestamp": "2026-01-01T08:01:00.004512"}',
      '6fc923ce03d4c1dad1785c7f8862e61b05b6033b9cdcfbe8811fbe729698f758',
    ],
    [
      '1767225720',
      '{"session_id": "room-7", "reply_to": "in_0b1c2d3e4f5a46789abcdef012345678", "sequence": 1, "is_final": true, "stream": false, "message": [{"type": "At", "target": "user-5567", "display": ""}, {"type": "Plain", "text": "Hi Alice!"}], "timestamp": "2026-01-01T08:02:00.120034"}',
      'fbcc32bf038d784cf8eccfe299d95ea846ef8f04db93621763c5d6e4a205d1c1',
    ],
  ];
  for (const [ts, body, hex] of vectors) {
    assert.equal(sign(OUTBOUND, ts, Buffer.from(body, 'utf8')), `sha256=${hex}`, body.slice(0, 80));
    assert.deepEqual(
      verifyInbound({ secret: OUTBOUND, timestampHeader: ts, signatureHeader: `sha256=${hex}`, rawBody: Buffer.from(body), nowSeconds: Number(ts) + 0.9 }),
      { ok: true },
    );
  }
  assert.equal(Buffer.byteLength(vectors[2][1]), 275);
});

const SIG_15_1 = 'sha256=b7e7d3e8b5e07dae9c9a676fcc968c106edcd977c2b5bd9f4269b4d24ed78af2';
const verify = (over: Partial<Parameters<typeof verifyInbound>[0]>) =>
  verifyInbound({
    secret: INBOUND,
    timestampHeader: '1767225600',
    signatureHeader: SIG_15_1,
    rawBody: Buffer.from(BODY_15_1),
    nowSeconds: 1767225600,
    ...over,
  });

test('verification reasons in LangBot\'s order', () => {
  assert.deepEqual(verify({}), { ok: true });
  // No secret beats everything, even a signature made with the empty key.
  assert.deepEqual(verify({ secret: '', signatureHeader: sign('', '1767225600', BODY_15_1) }), { ok: false, reason: 'no_secret' });
  assert.deepEqual(verify({ secret: '', timestampHeader: undefined }), { ok: false, reason: 'no_secret' });
  assert.deepEqual(verify({ timestampHeader: undefined }), { ok: false, reason: 'missing_headers' });
  assert.deepEqual(verify({ signatureHeader: '' }), { ok: false, reason: 'missing_headers' });
  // Missing headers win over a bad timestamp.
  assert.deepEqual(verify({ timestampHeader: 'abc', signatureHeader: null }), { ok: false, reason: 'missing_headers' });
  for (const ts of ['abc', 'nan', 'inf', '-Infinity', ' ', '0x10', '1__7', '1e400'])
    assert.deepEqual(verify({ timestampHeader: ts }), { ok: false, reason: 'bad_timestamp' }, ts);
  // A bad timestamp wins over a wrong signature; expiry wins over a wrong signature too.
  assert.deepEqual(verify({ timestampHeader: 'abc', signatureHeader: 'sha256=00' }), { ok: false, reason: 'bad_timestamp' });
  assert.deepEqual(verify({ nowSeconds: 1767225600 + 301, signatureHeader: 'x' }), { ok: false, reason: 'expired' });
});

test('±300 s window is inclusive and uses floor(now)', () => {
  assert.deepEqual(verify({ nowSeconds: 1767225900.99 }), { ok: true });
  assert.deepEqual(verify({ nowSeconds: 1767225300 }), { ok: true });
  assert.deepEqual(verify({ nowSeconds: 1767225901 }), { ok: false, reason: 'expired' });
  assert.deepEqual(verify({ nowSeconds: 1767225299.5 }), { ok: false, reason: 'expired' });
});

test('the raw header text is what is signed', () => {
  // Parses fine, but the signature was made over "1767225600.", not "1767225600.0.".
  assert.deepEqual(verify({ timestampHeader: '1767225600.0' }), { ok: false, reason: 'signature_mismatch' });
  const ts = ' 1767225600.5 ';
  assert.deepEqual(verify({ timestampHeader: ts, signatureHeader: sign(INBOUND, ts, Buffer.from(BODY_15_1)) }), { ok: true });
});

test('signature comparison is exact and case-sensitive', () => {
  assert.deepEqual(verify({ signatureHeader: SIG_15_1.toUpperCase() }), { ok: false, reason: 'signature_mismatch' });
  assert.deepEqual(verify({ signatureHeader: `${SIG_15_1} ` }), { ok: false, reason: 'signature_mismatch' });
  assert.deepEqual(verify({ secret: 'other' }), { ok: false, reason: 'signature_mismatch' });
  assert.deepEqual(verify({ rawBody: Buffer.from(`${BODY_15_1} `) }), { ok: false, reason: 'signature_mismatch' });
});

test('timestamp parsing follows int(float(text))', () => {
  const ok: [string, number][] = [
    ['1718000000', 1718000000],
    ['1718000000.9', 1718000000],
    ['1.718e9', 1718000000],
    [' 1718000000 ', 1718000000],
    ['1_718_000_000', 1718000000],
    ['.5', 0],
    ['5.', 5],
    ['-1.9', -1],
  ];
  for (const [t, want] of ok) assert.equal(parsePythonTimestamp(t), want, t);
  for (const t of ['', 'abc', 'nan', 'inf', '1e400', '0x10', '1__7', '_1', '1_'])
    assert.equal(parsePythonTimestamp(t), null, t);
});
