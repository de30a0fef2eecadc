import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SseParser, MAX_EVENT_CHARS } from './sse.js';

describe('server-sent events', () => {
  test('events split across chunks, comments skipped, multi-line data joined', () => {
    const p = new SseParser();
    assert.deepEqual(p.push(': connected\n\nevent: part\nda'), []);
    assert.deepEqual(p.push('ta: {"a":1}\r\n\r\ndata: x\ndata: y\n\n'), [{ event: 'part', data: '{"a":1}' }, { event: 'message', data: 'x\ny' }]);
  });
  test('an unterminated event over the bound is an error', () => {
    const p = new SseParser();
    assert.throws(() => p.push(`data: ${'x'.repeat(MAX_EVENT_CHARS)}`), /over/);
  });
});
