// The admin API as MCP tools: each tool is one route of the API, with the route's own role, and an
// input schema generated from the zod schemas the route validates with, so a tool accepts what the
// route accepts and nothing drifts.
import { z } from 'zod';
import { AdminApi } from '@conveyor/contracts';
import type { Role } from './auth.js';

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';
type ZodObjectLike = z.ZodObject<z.ZodRawShape>;

/** One admin route offered as a tool. Path parameters (`:id`) become required string arguments. */
export interface AdminMcpTool {
  name: string;
  description: string;
  method: Method;
  /** Relative to ADMIN_API_BASE, as in ADMIN_ROUTES. */
  path: string;
  /** The route's role, read from ADMIN_ROUTES. */
  role: Role;
  /** Query string arguments, validated by the route. */
  query?: ZodObjectLike;
  /** The JSON body, validated by the route. */
  body?: z.ZodType;
  /** Whether the call changes nothing (MCP's `readOnlyHint`). */
  readOnly: boolean;
  /** The JSON Schema of the tool's arguments. */
  inputSchema: { type: 'object'; properties: Record<string, unknown>; required?: string[] };
}

/** A version-checked delete names the version it read (the API's optimistic concurrency). */
const VersionOnly = z.strictObject({ version: z.number().int().min(1) });

type ToolSpec = Pick<AdminMcpTool, 'name' | 'description' | 'method' | 'path'> & { query?: ZodObjectLike; body?: z.ZodType };

/** The configuration resources the console edits, each with list, get, create, update and delete. */
function resourceTools(plural: string, singular: string, path: string, create: z.ZodType, update: z.ZodType): ToolSpec[] {
  return [
    { name: `list_${plural}`, description: `List the ${plural.replace(/_/g, ' ')} (a page; pass the answer's nextCursor as cursor for the next).`, method: 'GET', path, query: AdminApi.PageQuery },
    { name: `get_${singular}`, description: `One ${singular.replace(/_/g, ' ')} by id, with its version (secrets masked).`, method: 'GET', path: `${path}/:id` },
    { name: `create_${singular}`, description: `Create a ${singular.replace(/_/g, ' ')}.`, method: 'POST', path, body: create },
    { name: `update_${singular}`, description: `Change a ${singular.replace(/_/g, ' ')}: give the fields to change and the version you read (a concurrent change is refused).`, method: 'PATCH', path: `${path}/:id`, body: update },
    { name: `delete_${singular}`, description: `Delete a ${singular.replace(/_/g, ' ')}, naming the version you read.`, method: 'DELETE', path: `${path}/:id`, body: VersionOnly },
  ];
}

const SPECS: ToolSpec[] = [
  ...resourceTools('bots', 'bot', '/bots', AdminApi.BotCreate, AdminApi.BotUpdate),
  ...resourceTools('pipelines', 'pipeline', '/pipelines', AdminApi.PipelineCreate, AdminApi.PipelineUpdate),
  ...resourceTools('models', 'model', '/models', AdminApi.ModelCreate, AdminApi.ModelUpdate),
  { name: 'test_model', description: 'Send a short request to a model with its stored settings and say whether it answered.', method: 'POST', path: '/models/:id/test' },
  ...resourceTools('knowledge_bases', 'knowledge_base', '/knowledge-bases', AdminApi.KnowledgeBaseCreate, AdminApi.KnowledgeBaseUpdate),
  { name: 'list_knowledge_base_documents', description: 'The documents of a knowledge base and their ingestion state.', method: 'GET', path: '/knowledge-bases/:id/documents', query: AdminApi.PageQuery },
  { name: 'list_queries', description: 'The query log, newest first: one entry per message a bot received, with its outcome.', method: 'GET', path: '/queries', query: AdminApi.QueryLogFilter },
  { name: 'get_query', description: 'One query log entry by query id.', method: 'GET', path: '/queries/:id' },
  { name: 'get_query_timeline', description: 'What happened to one message, stage by stage, with the trace id.', method: 'GET', path: '/queries/:id/timeline' },
  { name: 'get_monitoring_summary', description: 'Totals, per bot, pipeline and model, and a time series for a range (1h, 24h, 7d, 30d or custom).', method: 'GET', path: '/monitoring/summary', query: AdminApi.MonitoringRange },
  { name: 'list_monitoring_errors', description: 'Failed queries in a range, newest first.', method: 'GET', path: '/monitoring/errors', query: AdminApi.MonitoringErrorFilter },
  { name: 'list_monitoring_sessions', description: 'Conversations (sessions) with their message counts and last activity.', method: 'GET', path: '/monitoring/sessions', query: AdminApi.MonitoringSessionFilter },
];

const jsonSchema = (schema: z.ZodType) => z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as { properties?: Record<string, unknown>; required?: string[] };

function routeRole(method: Method, path: string): Role {
  const route = AdminApi.ADMIN_ROUTES.find(([m, p]) => m === method && p === path);
  if (!route || route[2] === 'public') throw new Error(`MCP tool route ${method} ${path} is not a guarded admin route`);
  return route[2];
}

function tool(spec: ToolSpec): AdminMcpTool {
  const params = [...spec.path.matchAll(/:([A-Za-z]+)/g)].map((m) => m[1]!);
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  for (const p of params) {
    properties[p] = { type: 'string', minLength: 1, maxLength: 200, description: `The ${p} in the route ${spec.path}` };
    required.push(p);
  }
  if (spec.query) Object.assign(properties, jsonSchema(spec.query).properties ?? {});
  if (spec.body) {
    properties.body = jsonSchema(spec.body);
    required.push('body');
  }
  return {
    ...spec,
    role: routeRole(spec.method, spec.path),
    readOnly: spec.method === 'GET',
    inputSchema: { type: 'object', properties, ...(required.length ? { required } : {}) },
  };
}

/** Every admin tool, built once; a tool whose route is missing from ADMIN_ROUTES fails here, at load. */
export const ADMIN_MCP_TOOLS: readonly AdminMcpTool[] = SPECS.map(tool);

/** The tools a role may call: a viewer gets the read tools only. */
export function adminMcpTools(role: Role): AdminMcpTool[] {
  return ADMIN_MCP_TOOLS.filter((t) => role === 'admin' || t.role === 'viewer');
}

/** The HTTP request a tool call makes, or the reason its arguments do not make one. */
export type AdminMcpRequest = { method: Method; path: string; body?: unknown } | { error: string };

/**
 * Turns a tool's arguments into the route's request: path parameters into the path, query arguments
 * into the query string, `body` as the JSON body. The route validates everything else itself.
 */
export function adminMcpRequest(t: AdminMcpTool, args: Record<string, unknown>): AdminMcpRequest {
  let path = t.path;
  for (const [, name] of t.path.matchAll(/:([A-Za-z]+)/g)) {
    const value = args[name!];
    if (typeof value !== 'string' || value.length === 0 || value.length > 200) return { error: `${name}: a string of 1 to 200 characters is required` };
    path = path.replace(`:${name}`, encodeURIComponent(value));
  }
  if (t.query) {
    const search = new URLSearchParams();
    for (const key of Object.keys(t.query.shape)) {
      const value = args[key];
      if (value === undefined || value === null) continue;
      if (typeof value === 'object') return { error: `${key}: a string, number or boolean is expected` };
      search.set(key, String(value));
    }
    const qs = search.toString();
    if (qs) path += `?${qs}`;
  }
  if (t.body && (args.body === undefined || typeof args.body !== 'object' || args.body === null)) return { error: 'body: an object is required' };
  return { method: t.method, path, ...(t.body ? { body: args.body } : {}) };
}
