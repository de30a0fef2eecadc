/**
 * The fake MCP server over stdio, as the runner spawns a configured `command`:
 * `node test/dist/fakes/mcp-stdio-main.js [echoPrefix]`.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { buildMcpServer } from './mcp-server.js';

await buildMcpServer({ name: 'conveyor-fake-mcp-stdio', echoPrefix: process.argv[2] }).connect(new StdioServerTransport());
