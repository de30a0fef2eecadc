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

  const { base, close } = await serve(handle);
  return { url: `${base}/mcp`, calls, close };
}

/** Serves `handle` over HTTP on a free port; a handler that throws answers 500 while it still can. */
async function serve(handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>): Promise<{ base: string; close(): Promise<void> }> {
  const http = createServer((req, res) => {
    handle(req, res).catch((err) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  const base = await listen(http);
  return {
    base,
    close: async () => {
      http.closeAllConnections();
      await closeServer(http);
    },
  };
}

/** One answer of the scripted server to a `tools/call`, as bytes on the wire. */
export interface RawMcpAnswer {
  /** Default 200. */
  status?: number;
  /** Default `application/json`; `''` sends none. */
  contentType?: string;
  body: string | Buffer;
  /** `destroy` cuts the connection after the body instead of ending the response. */
  ending?: 'end' | 'destroy';
}

/** Builds the answer to one `tools/call`; `id` is the request's JSON-RPC id, as JSON text. */
export type McpCallResponder = (call: { id: string; name: string; arguments: unknown }) => RawMcpAnswer | Promise<RawMcpAnswer>;

export interface ScriptedMcp {
  url: string;
  /** tools/call requests seen, in order. */
  calls: { name: string; arguments: unknown }[];
  /** What `tools/call` answers from now on; without one, a text result naming the tool (the default). */
  setCallResponder(responder?: McpCallResponder): void;
  close(): Promise<void>;
}

/** A JSON-RPC response to request `id` (given as JSON text), with `result` as JSON text. */
export function jsonRpcResult(id: string, result: string): string {
  return `{"jsonrpc":"2.0","id":${id},"result":${result}}`;
}

/**
 * An MCP server over Streamable HTTP (stateless, JSON answers) written by hand rather than with the
 * SDK, so a `tools/call` can be answered with anything at all: malformed JSON-RPC, odd content types,
 * cut connections. The handshake and `tools/list` are answered properly; `tools` names what it lists.
 */
export async function startScriptedMcp(opts: { tools?: { name: string; description?: string; inputSchema?: Record<string, unknown> }[] } = {}): Promise<ScriptedMcp> {
  const calls: ScriptedMcp['calls'] = [];
  const tools = opts.tools ?? [{ name: 'probe', description: 'Answers whatever the test scripted', inputSchema: { type: 'object', properties: {} } }];
  const textResult: McpCallResponder = ({ id, name }) => ({ body: jsonRpcResult(id, JSON.stringify({ content: [{ type: 'text', text: `${name} done` }] })) });
  let responder = textResult;

  const json = (res: ServerResponse, status: number, body: string) => {
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  };

  async function answer(res: ServerResponse, message: { id?: unknown; method?: unknown; params?: { name?: unknown; arguments?: unknown; protocolVersion?: unknown } }): Promise<void> {
    const id = JSON.stringify(message.id ?? null);
    switch (message.method) {
      case 'initialize':
        return json(res, 200, jsonRpcResult(id, JSON.stringify({ protocolVersion: message.params?.protocolVersion ?? '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'conveyor-scripted-mcp', version: '1.0.0' } })));
      case 'tools/list':
        return json(res, 200, jsonRpcResult(id, JSON.stringify({ tools: tools.map((t) => ({ inputSchema: { type: 'object' }, ...t })) })));
      case 'ping':
        return json(res, 200, jsonRpcResult(id, '{}'));
      case 'tools/call': {
        const call = { name: String(message.params?.name), arguments: message.params?.arguments };
        calls.push(call);
        const raw = await responder({ id, ...call });
        const headers: Record<string, string | number> = { 'Content-Length': Buffer.byteLength(raw.body) };
        if (raw.contentType !== '') headers['Content-Type'] = raw.contentType ?? 'application/json';
        res.writeHead(raw.status ?? 200, headers);
        if (raw.ending === 'destroy') {
          res.write(raw.body);
          res.destroy();
        } else res.end(raw.body);
        return;
      }
      default:
        return json(res, 200, `{"jsonrpc":"2.0","id":${id},"error":{"code":-32601,"message":"Method not found"}}`);
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp') return void res.writeHead(404).end();
    // No standalone event stream and no sessions to end: the client is told so and carries on.
    if (req.method !== 'POST') return void res.writeHead(405).end();
    const message = JSON.parse((await readBody(req)).toString('utf8')) as Parameters<typeof answer>[1];
    // Notifications (no id) are acknowledged without a body.
    if (message.id === undefined) return void res.writeHead(202).end();
    await answer(res, message);
  }

  const { base, close } = await serve(handle);
  return { url: `${base}/mcp`, calls, setCallResponder: (r) => void (responder = r ?? textResult), close };
}
