import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { migrationChecksum, scriptMatchesChecksum } from './checksum.js';

test('checksum is the zero-padded sha256 hex of the script (prisma-engines test vector)', () => {
  assert.equal(migrationChecksum('hello'), '2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824');
  const sql = 'CREATE TABLE "é" ("id" TEXT);\n';
  assert.equal(migrationChecksum(sql), createHash('sha256').update(Buffer.from(sql, 'utf8')).digest('hex'));
});

test('the checksum itself does not normalize line endings', () => {
  assert.notEqual(migrationChecksum('a\nb\n'), migrationChecksum('a\r\nb\r\n'));
});

test('matching tolerates LF/CRLF conversion both ways, like Prisma', () => {
  for (const [a, b] of [['ab\ncd\nef\ngh\rab', 'ab\r\ncd\r\nef\r\ngh\rab'], ['ab\ncd\n', 'ab\r\ncd\r\n']]) {
    assert.ok(scriptMatchesChecksum(a, migrationChecksum(b)));
    assert.ok(scriptMatchesChecksum(b, migrationChecksum(a)));
    assert.ok(scriptMatchesChecksum(a, migrationChecksum(a)));
  }
});

test('matching rejects any other change', () => {
  assert.equal(scriptMatchesChecksum('abc', migrationChecksum('abcd')), false);
  assert.equal(scriptMatchesChecksum('abc\n', migrationChecksum('abc')), false);
  assert.equal(scriptMatchesChecksum('abc', ''), false);
});

test('matching accepts the unpadded hex of old engines (prisma-engines#1887)', () => {
  // Find a script whose digest has a byte below 0x10, so padding makes a difference.
  let script = '';
  for (let i = 0; ; i++) {
    script = `SELECT ${i};`;
    if (createHash('sha256').update(script).digest().some((b) => b < 0x10)) break;
  }
  const unpadded = [...createHash('sha256').update(script).digest()].map((b) => b.toString(16)).join('');
  assert.ok(unpadded.length < 64);
  assert.ok(scriptMatchesChecksum(script, unpadded));
  assert.equal(scriptMatchesChecksum(`${script} `, unpadded), false);
});
