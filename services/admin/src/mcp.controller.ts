// The admin API as an MCP server (Streamable HTTP, stateless): an agent or an IDE holding an API
// token manages bots, pipelines, models and knowledge bases and reads the query log and monitoring
// through MCP tools. Each tool call is sent to this service's own listener as the route it mirrors,
// on the caller's credential, so the guard, the validation and the audit of the API apply unchanged.
import { Controller, Delete, Get, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { AdminApi } from '@conveyor/contracts';
import { adminMcpServer, mcpRefusalAnswer, recordAudit, type Principal } from '@conveyor/admin';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { Caller, RequireRole } from './http.js';

const VERSION = '0.1.0';
/** The answer to GET and DELETE: an AdminError, as every refusal of the API is. */
const STATELESS_ONLY: AdminApi.AdminError = { statusCode: 405, code: 'method_not_allowed', message: 'this MCP server is stateless: POST only', field: 'method' };

/** One tool call's own request to the API; a slow route (a model test) is bounded like a browser's call. */
const DISPATCH_TIMEOUT_MS = 120_000;

@Controller(`${AdminApi.ADMIN_API_BASE.replace(/^\//, '')}/mcp`)
@RequireRole('viewer')
export class McpController {
  constructor(@Inject(INFRA) private readonly infra: Infra) {}

  @Post()
  async call(@Caller() caller: Principal, @Req() req: Request, @Res() res: Response): Promise<void> {
    const own = ownAddress(req);
    const server = adminMcpServer(caller, {
      version: VERSION,
      audit: (record) => this.infra.prisma.$transaction((tx) => recordAudit(tx, record)),
      dispatch: async ({ method, path, body }) => {
        const headers: Record<string, string> = { accept: 'application/json' };
        for (const name of ['authorization', 'cookie', 'traceparent', 'tracestate']) {
          const value = req.headers[name];
          if (typeof value === 'string') headers[name] = value;
        }
        if (body !== undefined) headers['content-type'] = 'application/json';
        const answer = await fetch(`${own}${AdminApi.ADMIN_API_BASE}${path}`, {
          method,
          headers,
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
          signal: AbortSignal.timeout(DISPATCH_TIMEOUT_MS),
        });
        const text = await answer.text();
        return { status: answer.status, body: text ? parseJson(text) : undefined };
      },
    });
    // Stateless: no session id, one JSON answer per request, so any replica serves any call.
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    try {
      await server.connect(transport);
      const answer = await transport.handleRequest(webRequest(req, own), { parsedBody: req.body });
      const text = await answer.text();
      if (answer.status >= 400 && answer.status < 500) {
        // A refusal of the transport (headers, a body that is not JSON-RPC) names its input, as the API's do.
        res.status(answer.status).json(mcpRefusalAnswer(answer.status, text));
        return;
      }
      res.status(answer.status);
      answer.headers.forEach((value, name) => res.setHeader(name, value));
      res.end(text);
    } finally {
      await transport.close();
      await server.close();
    }
  }

  /** No server-sent stream and no sessions here: MCP clients read 405 as "not offered". */
  @Get()
  @HttpCode(405)
  stream(@Res({ passthrough: true }) res: Response) {
    res.setHeader('allow', 'POST');
    return STATELESS_ONLY;
  }

  @Delete()
  @HttpCode(405)
  end(@Res({ passthrough: true }) res: Response) {
    res.setHeader('allow', 'POST');
    return STATELESS_ONLY;
  }
}

/** The request as the Fetch API's, for the transport: its method, URL and headers (the body is parsed already). */
function webRequest(req: Request, own: string): globalThis.Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string') headers.set(name, value);
    else if (Array.isArray(value)) for (const v of value) headers.append(name, v);
  }
  return new globalThis.Request(`${own}${req.originalUrl}`, { method: req.method, headers });
}

/** The listener this request came in on, as a URL this process can call. */
function ownAddress(req: Request): string {
  const address = (req.socket.localAddress ?? '127.0.0.1').replace(/^::ffff:/, '');
  return `http://${address.includes(':') ? `[${address}]` : address}:${req.socket.localPort}`;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
