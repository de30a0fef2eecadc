/**
 * A stdio MCP server that reports the environment it was started with (its `environment` tool
 * answers with the variables as JSON), so a test can see what a runner hands a child process:
 * `node test/dist/fakes/mcp-stdio-env-main.js`.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

const server = new McpServer({ name: 'conveyor-fake-mcp-env', version: '1.0.0' });
server.registerTool('environment', { description: 'The variables this server was started with' }, async () => ({
  content: [{ type: 'text', text: JSON.stringify(process.env) }],
}));
await server.connect(new StdioServerTransport());
