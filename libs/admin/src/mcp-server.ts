import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Principal } from './auth.js';
import type { AuditRecord } from './audit.js';
import { adminMcpRequest, adminMcpTools, ADMIN_MCP_TOOLS } from './mcp-tools.js';

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
