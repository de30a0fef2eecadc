// POST /mcp-servers/:id/test: connect to an http or sse MCP server and list its tools, timed. A stdio
// server is a command the runners start; the admin service does not run commands, so it is not tested.
import type { AdminApi } from '@conveyor/contracts';
import { McpSession, type McpServerConfig } from '@conveyor/agent';

const TEST_TIMEOUT_MS = 15_000;
const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

export async function testMcpServer(row: { id: string; name: string; transport: string; config: unknown }): Promise<AdminApi.McpServerTestResult> {
  if (row.transport !== 'http' && row.transport !== 'sse') {
    return { ok: false, latencyMs: 0, error: `a ${row.transport} server is started by each runner; only http and sse servers can be tested from here` };
  }
  const config = row.config !== null && typeof row.config === 'object' && !Array.isArray(row.config) ? Object.fromEntries(Object.entries(row.config)) : {};
  const server: McpServerConfig = { id: row.id, name: row.name, transport: row.transport, config };
  const session = new McpSession(server, { logger: quiet, connectTimeoutMs: TEST_TIMEOUT_MS, callTimeoutMs: TEST_TIMEOUT_MS, toolsTtlMs: 0 });
  const started = performance.now();
  try {
    const tools = await session.listTools();
    return { ok: true, latencyMs: Math.round(performance.now() - started), tools: tools.map((t) => t.name) };
  } catch (err) {
    return { ok: false, latencyMs: Math.round(performance.now() - started), error: err instanceof Error ? err.message : String(err) };
  } finally {
    await session.close().catch(() => undefined);
  }
}
