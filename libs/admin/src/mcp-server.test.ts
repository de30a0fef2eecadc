import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AdminApi } from '@conveyor/contracts';
import { mcpRefusalAnswer } from './mcp-server.js';

const refusal = (code: number, message: string) => JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null });

test("a refusal of the MCP transport keeps its JSON-RPC error and is an AdminError naming the refused input", () => {
  const cases: [number, number, string][] = [
    [406, -32000, 'header.accept'],
    [415, -32000, 'header.content-type'],
    [400, -32000, 'header.mcp-protocol-version'],
    [400, -32700, 'body'],
    [400, -32600, 'body'],
    [413, -32000, 'body'],
  ];
  for (const [status, code, field] of cases) {
    const answer = mcpRefusalAnswer(status, refusal(code, `refused ${status}`));
    assert.deepEqual(answer.error, { code, message: `refused ${status}` }, 'MCP clients read the JSON-RPC error');
    assert.equal(answer.jsonrpc, '2.0');
    assert.equal(answer.id, null);
    const asAdminError = AdminApi.AdminError.parse(answer);
    assert.deepEqual(asAdminError, { statusCode: status, code: 'validation_failed', message: `refused ${status}`, field }, `${status} ${code}`);
  }
});

test('a refusal whose body is not a JSON-RPC error is still an AdminError naming the body', () => {
  for (const body of ['not json', '{"error":"x"}', '']) {
    const answer = mcpRefusalAnswer(400, body);
    assert.equal(answer.field, 'body');
    assert.equal(answer.code, 'validation_failed');
    assert.ok(answer.message.length > 0);
    assert.equal(answer.error, undefined);
  }
});
