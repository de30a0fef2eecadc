import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { formatRoute, parseRoute } from './routes.js';

describe('routes', () => {
  test('a fragment names the page, the resource and the filters, and formats back the same', () => {
    const r = parseRoute('#/queries/q%2F1?botId=b1&status=failed');
    assert.deepEqual(r, { page: 'queries', id: 'q/1', params: { botId: 'b1', status: 'failed' } });
    assert.equal(formatRoute({ page: 'queries', id: 'q/1', params: { botId: 'b1', status: 'failed', empty: undefined } }), '#/queries/q%2F1?botId=b1&status=failed');
  });
  test('an unknown or empty fragment is the dashboard', () => {
    assert.deepEqual(parseRoute(''), { page: 'dashboard', params: {} });
    assert.deepEqual(parseRoute('#/nope/x'), { page: 'dashboard', params: {} });
  });
});
