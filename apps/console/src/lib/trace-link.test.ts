import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { traceUrl, DEFAULT_TRACE_URL_TEMPLATE } from './trace-link.js';

describe('trace links', () => {
  const id = '0af7651916cd43dd8448eb211c80319c';
  test('the template gets the trace id', () => {
    assert.equal(traceUrl(DEFAULT_TRACE_URL_TEMPLATE, id), `http://localhost:16686/trace/${id}`);
  });
  test('no link for a missing or malformed id, a template without {traceId}, or a non-http URL', () => {
    assert.equal(traceUrl(DEFAULT_TRACE_URL_TEMPLATE, null), undefined);
    assert.equal(traceUrl(DEFAULT_TRACE_URL_TEMPLATE, 'abc'), undefined);
    assert.equal(traceUrl('http://jaeger/search', id), undefined);
    assert.equal(traceUrl('javascript:alert({traceId})', id), undefined);
  });
});
