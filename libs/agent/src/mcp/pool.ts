import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { AgentLogger } from '../agent-loop.js';
import type { ToolDefinition } from '../llm-call.js';
import { ToolNotFoundError, type ToolBox } from '../tools.js';
import { McpSession, type McpServerConfig, type McpSessionOptions } from './session.js';

/** OpenAI function names: ^[a-zA-Z0-9_-]{1,64}$. */
function functionName(raw: string): string {
  return raw.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64) || 'tool';
}

export interface ExposedTool {
  exposedName: string;
  server: McpServerConfig;
  tool: Tool;
}

/**
 * Names the tools of several servers for the model. LangBot sends raw MCP names and routes a
 * duplicate to whichever server comes first, so which one runs depends on load order. Here servers
 * are ordered by (name, id); the first keeps the raw name, later ones get `<server>__<tool>`, so
 * every tool stays callable and the mapping is the same on every replica.
 */
export function nameTools(lists: { server: McpServerConfig; tools: Tool[] }[]): { tools: ExposedTool[]; renamed: ExposedTool[] } {
  const ordered = [...lists].sort((a, b) => a.server.name.localeCompare(b.server.name) || a.server.id.localeCompare(b.server.id));
  const used = new Set<string>();
  const tools: ExposedTool[] = [];
  const renamed: ExposedTool[] = [];
  for (const { server, tools: list } of ordered) {
    for (const tool of list) {
      let name = functionName(tool.name);
      const collided = used.has(name);
      if (collided) name = functionName(`${server.name}__${tool.name}`);
      for (let n = 2; used.has(name); n++) name = functionName(`${server.name}__${tool.name}`).slice(0, 60) + `_${n}`;
      used.add(name);
      const exposed = { exposedName: name, server, tool };
      tools.push(exposed);
      if (collided) renamed.push(exposed);
    }
  }
  return { tools, renamed };
}

/** Every MCP session of this runner process, keyed by server id; a changed config replaces its session. */
export class McpPool {
  private readonly sessions = new Map<string, { key: string; session: McpSession }>();

  constructor(private readonly opts: McpSessionOptions) {}

  /** Brings the sessions in line with the enabled McpServer rows. */
  sync(servers: McpServerConfig[]): void {
    const wanted = new Map(servers.map((s) => [s.id, s]));
    for (const [id, entry] of this.sessions) {
      const s = wanted.get(id);
      if (!s || JSON.stringify(s) !== entry.key) {
        this.sessions.delete(id);
        void entry.session.close();
      }
    }
    for (const s of servers) {
      if (!this.sessions.has(s.id)) this.sessions.set(s.id, { key: JSON.stringify(s), session: new McpSession(s, this.opts) });
    }
  }

  /**
   * A tool box over the bound servers ('all' or ids). A server that cannot be reached now is left
   * out (and logged) rather than failing the run: the model answers with the tools that work.
   */
  async toolBox(binding: 'all' | readonly string[]): Promise<ToolBox> {
    const bound = [...this.sessions.entries()].filter(([id]) => binding === 'all' || binding.includes(id)).map(([, e]) => e.session);
    const lists = await Promise.all(
      bound.map(async (session) => {
        try {
          return { server: session.server, tools: await session.listTools(), session };
        } catch (err) {
          this.opts.logger.warn({ mcpServer: session.server.name, err: (err as Error).message }, 'MCP server unavailable; its tools are left out of this run');
          return null;
        }
      }),
    );
    const ok = lists.filter((l) => l !== null);
    const { tools, renamed } = nameTools(ok);
    for (const r of renamed) this.opts.logger.warn({ mcpServer: r.server.name, tool: r.tool.name, exposedAs: r.exposedName }, 'MCP tool name collision; renamed');
    const byName = new Map(tools.map((t) => [t.exposedName, t]));
    const sessionOf = new Map(ok.map((l) => [l.server.id, l.session]));
    const definitions: ToolDefinition[] = tools.map((t) => ({
      type: 'function',
      function: { name: t.exposedName, description: t.tool.description ?? '', parameters: t.tool.inputSchema as Record<string, unknown> },
    }));
    return {
      definitions: () => definitions,
      call: (name, args, signal) => {
        const t = byName.get(name);
        if (!t) return Promise.reject(new ToolNotFoundError(name));
        return sessionOf.get(t.server.id)!.callTool(t.tool.name, args, signal);
      },
    };
  }

  async close(): Promise<void> {
    const all = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.all(all.map((e) => e.session.close()));
  }
}
