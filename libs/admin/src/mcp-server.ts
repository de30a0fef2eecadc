import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, JSONRPCErrorResponseSchema, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Principal } from './auth.js';
import type { AuditRecord } from './audit.js';
import { adminMcpRequest, adminMcpTools, ADMIN_MCP_TOOLS } from './mcp-tools.js';
import { z } from 'zod';
import type { AdminApi } from '@conveyor/contracts';

/** Bytes of one tool answer the client gets; a longer page is cut with a note (ask for a smaller `limit`). */
const ANSWER_CHARS = 200_000;

export interface AdminMcpDeps {
  /** Sends the route's request as the caller (the API's own guard, validation and audit apply). */
  dispatch(request: { method: string; path: string; body?: unknown }): Promise<{ status: number; body: unknown }>;
  /** Records the call in the audit log. */
  audit(record: AuditRecord): Promise<void>;
  version: string;
}

/**
 * An MCP server for one caller: it lists the admin tools the caller's role may use and runs each as
 * the API route it mirrors, on the caller's own credential. Every call, allowed or refused, is in the
 * audit log (`mcp-tool`, the tool's name, `call` or `refused`); a write the route makes is audited by
 * the route as well. Built per request: the admin API is stateless, so any replica serves any call.
 */
export function adminMcpServer(caller: Principal, deps: AdminMcpDeps): Server {
  const server = new Server({ name: 'conveyor-admin', version: deps.version }, { capabilities: { tools: {} } });
  const mine = adminMcpTools(caller.role);
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: mine.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema, annotations: { readOnlyHint: t.readOnly, destructiveHint: t.method === 'DELETE' } })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (req): Promise<CallToolResult> => {
    const name = req.params.name;
    const allowed = mine.find((t) => t.name === name);
    if (!allowed) {
      const exists = ADMIN_MCP_TOOLS.some((t) => t.name === name);
      if (exists) await deps.audit({ actor: caller.actor, resource: 'mcp-tool', resourceId: name, action: 'refused' });
      return failure(exists ? `${name} needs the admin role; this token is a ${caller.role}'s` : `no tool ${JSON.stringify(name.slice(0, 100))}`);
    }
    const request = adminMcpRequest(allowed, req.params.arguments ?? {});
    if ('error' in request) return failure(request.error);
    await deps.audit({ actor: caller.actor, resource: 'mcp-tool', resourceId: name, action: 'call' });
    const answer = await deps.dispatch(request);
    const text = answer.body === undefined ? `HTTP ${answer.status}` : JSON.stringify(answer.body, null, 1);
    const cut = text.length > ANSWER_CHARS ? `${text.slice(0, ANSWER_CHARS)}\n[cut at ${ANSWER_CHARS} characters: ask for a smaller page]` : text;
    return { content: [{ type: 'text', text: cut }], ...(answer.status >= 400 ? { isError: true } : {}) };
  });
  return server;
}

function failure(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

/**
 * The body of a refusal of the MCP transport: the SDK's JSON-RPC error, answering no request (the
 * transport writes `id: null` there, which the SDK's schema, made for answers to requests, refuses).
 */
const JsonRpcRefusal = JSONRPCErrorResponseSchema.extend({ id: z.null() });
type JsonRpcRefusal = z.infer<typeof JsonRpcRefusal>;

/** JSON-RPC's codes for a request that is not JSON-RPC at all (-32700) or not a valid request (-32600). */
const JSON_RPC_UNREADABLE = new Set([-32700, -32600]);

/**
 * The input a refusal of the MCP transport is about, by its HTTP status and JSON-RPC code: every
 * refusal of the admin API names one, the MCP endpoint's included.
 */
function refusedInput(status: number, code: number): string {
  if (status === 406) return 'header.accept';
  if (status === 415) return 'header.content-type';
  // A POST to a stateless server is refused with the generic code only for its protocol version header.
  if (status === 400 && !JSON_RPC_UNREADABLE.has(code)) return 'header.mcp-protocol-version';
  return 'body';
}

/**
 * The answer to a request the MCP transport refused (its HTTP status and body): its JSON-RPC error,
 * which MCP clients read, and the same as an AdminError (`validation_failed`, the refused input in
 * `field`), which every other client of the API reads (the two shapes share no key).
 */
export function mcpRefusalAnswer(status: number, body: string): Partial<JsonRpcRefusal> & AdminApi.AdminError {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  const parsed = JsonRpcRefusal.safeParse(json);
  if (!parsed.success) return { statusCode: status, code: 'validation_failed', message: body.slice(0, 500) || `refused (${status})`, field: 'body' };
  return { ...parsed.data, statusCode: status, code: 'validation_failed', message: parsed.data.error.message, field: refusedInput(status, parsed.data.error.code) };
}
