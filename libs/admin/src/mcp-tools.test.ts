import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_MCP_TOOLS, adminMcpRequest, adminMcpTools } from './mcp-tools.js';

const tool = (name: string) => {
  const found = ADMIN_MCP_TOOLS.find((t) => t.name === name);
  assert.ok(found, `tool ${name}`);
  return found;
};

test('each tool carries its route\'s role; a viewer gets exactly the GET tools', () => {
  assert.equal(tool('list_bots').role, 'viewer');
  assert.equal(tool('create_bot').role, 'admin');
  assert.equal(tool('test_model').role, 'admin');
  const viewer = adminMcpTools('viewer');
  assert.deepEqual(viewer.map((t) => t.name), ADMIN_MCP_TOOLS.filter((t) => t.method === 'GET').map((t) => t.name));
  assert.equal(adminMcpTools('admin').length, ADMIN_MCP_TOOLS.length);
  assert.equal(new Set(ADMIN_MCP_TOOLS.map((t) => t.name)).size, ADMIN_MCP_TOOLS.length, 'names are unique');
});

test('input schemas: path parameters and the body are required; query fields come from the route\'s own schema', () => {
  const update = tool('update_pipeline').inputSchema;
  assert.deepEqual(update.required, ['id', 'body']);
  assert.equal((update.properties.body as { type: string }).type, 'object');
  const queries = tool('list_queries').inputSchema;
  assert.equal(queries.required, undefined);
  assert.ok('limit' in queries.properties && 'cursor' in queries.properties);
});

test('arguments become the route\'s request: parameters encoded into the path, query fields into the query string', () => {
  assert.deepEqual(adminMcpRequest(tool('get_query_timeline'), { id: 'a/b c' }), { method: 'GET', path: '/queries/a%2Fb%20c/timeline' });
  assert.deepEqual(adminMcpRequest(tool('list_queries'), { limit: 5, botId: 'b1', ignored: 'x' }), { method: 'GET', path: '/queries?limit=5&botId=b1' });
  assert.deepEqual(adminMcpRequest(tool('delete_bot'), { id: 'b1', body: { version: 3 } }), { method: 'DELETE', path: '/bots/b1', body: { version: 3 } });
  assert.deepEqual(adminMcpRequest(tool('get_bot'), {}), { error: 'id: a string of 1 to 200 characters is required' });
  assert.deepEqual(adminMcpRequest(tool('create_bot'), { body: 'x' }), { error: 'body: an object is required' });
  assert.deepEqual(adminMcpRequest(tool('list_queries'), { limit: { $gt: 1 } }), { error: 'limit: a string, number or boolean is expected' });
});
