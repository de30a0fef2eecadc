import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { z } from 'zod';
import { closeServer, listen, readBody } from './http-util.js';

/**
 * A real MCP server built with the SDK, for the runner's MCP client: `add`, `echo`, `fail` (an
 * isError result), `slow` and `pixel` (image content). `prefix` renames the tools so two servers
 * can collide or not.
 */
export function buildMcpServer(opts: { name?: string; echoPrefix?: string } = {}): McpServer {
  const server = new McpServer({ name: opts.name ?? 'conveyor-fake-mcp', version: '1.0.0' });
  const echoPrefix = opts.echoPrefix ?? 'echo';
  server.registerTool('add', { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => ({
    content: [{ type: 'text', text: String(a + b) }],
  }));
  server.registerTool('echo', { description: 'Echoes the text', inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: 'text', text: `${echoPrefix}: ${text}` }],
  }));
  server.registerTool('fail', { description: 'Always fails' }, async () => ({ isError: true, content: [{ type: 'text', text: 'the tool failed on purpose' }] }));
  server.registerTool('slow', { description: 'Answers after ms', inputSchema: { ms: z.number() } }, async ({ ms }) => {
    await new Promise((r) => setTimeout(r, ms));
    return { content: [{ type: 'text', text: 'slow done' }] };
  });
  server.registerTool('pixel', { description: 'A 1x1 PNG' }, async () => ({
    content: [{ type: 'image', mimeType: 'image/png', data: 'iVBORw0KGgo=' }],
  }));
  return server;
}

export interface FakeMcpHttp {
  url: string;
  /** tools/call requests seen, by tool name. */
  calls: string[];
  close(): Promise<void>;
}

/**
 * The server over HTTP. `streamable` (default): Streamable HTTP, stateless (a fresh server per
 * request). `sse-only`: the older HTTP+SSE transport, answering a Streamable POST with 405 so the
 * client has to fall back.
 */
export async function startFakeMcpHttp(opts: { mode?: 'streamable' | 'sse-only'; echoPrefix?: string } = {}): Promise<FakeMcpHttp> {
  const calls: string[] = [];
  const sse = new Map<string, SSEServerTransport>();
  const record = (body: unknown) => {
    for (const m of Array.isArray(body) ? body : [body]) {
      const msg = m as { method?: string; params?: { name?: string } };
      if (msg?.method === 'tools/call' && msg.params?.name) calls.push(msg.params.name);
    }
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    if (opts.mode === 'sse-only') {
      if (req.method === 'GET' && url.pathname === '/mcp') {
        const transport = new SSEServerTransport('/messages', res);
        sse.set(transport.sessionId, transport);
        res.on('close', () => sse.delete(transport.sessionId));
        await buildMcpServer(opts).connect(transport);
        return;
      }
      if (req.method === 'POST' && url.pathname === '/messages') {
        const transport = sse.get(url.searchParams.get('sessionId') ?? '');
        if (!transport) return void res.writeHead(404).end();
        const body = JSON.parse((await readBody(req)).toString('utf8'));
        record(body);
        await transport.handlePostMessage(req, res, body);
        return;
      }
      return void res.writeHead(405).end();
    }
    if (url.pathname !== '/mcp') return void res.writeHead(404).end();
    if (req.method !== 'POST') return void res.writeHead(405).end();
    const body = JSON.parse((await readBody(req)).toString('utf8'));
    record(body);
    const server = buildMcpServer(opts);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  }

  const http = createServer((req, res) => {
    handle(req, res).catch((err) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  const base = await listen(http);
  return {
    url: `${base}/mcp`,
    calls,
    close: async () => {
      http.closeAllConnections();
      await closeServer(http);
    },
  };
}
