import type { PluginBinding, PluginTool, PluginToolCall, PluginToolResult } from '@conveyor/contracts';
import type { AgentLogger } from './agent-loop.js';
import type { ToolDefinition } from './llm-call.js';
import { ContentResult, ToolNotFoundError, type ToolBox } from './tools.js';

/** Where plugin tools come from and go to (the runner's plugin host). */
export interface PluginToolPort<P extends { name: string } = { name: string }> {
  /** The tools of the live plugins the binding names, in the order that decides a name clash. */
  toolsFor(binding: PluginBinding): Array<{ plugin: P; tool: PluginTool }>;
  /** Throws (with a message for the model) when the plugin gives no usable answer. */
  callTool(plugin: P, call: Omit<PluginToolCall, 'v'>): Promise<PluginToolResult>;
}

export interface PluginToolBoxOptions {
  binding: PluginBinding;
  /** Names the run's other tools (sandbox, MCP) already have: a plugin tool never shadows one. */
  taken: ReadonlySet<string>;
  run: { queryId: string; botId: string; pipelineId: string };
  logger: AgentLogger;
}

/** A failure the plugin reported in its result (`is_error`): the model reads it as the tool's error. */
export class PluginToolFailure extends Error {}

/**
 * The tools the pipeline's bound plugins offer, for one run. A name another tool of the run already
 * has (a sandbox or MCP tool, or an earlier plugin's) is refused and logged, so which tool runs never
 * depends on timing. A call goes to the plugin over NATS; its text or content parts are the result.
 */
export function pluginToolBox<P extends { name: string }>(port: PluginToolPort<P>, o: PluginToolBoxOptions): ToolBox {
  const taken = new Set(o.taken);
  const offered = new Map<string, { plugin: P; tool: PluginTool }>();
  for (const entry of port.toolsFor(o.binding)) {
    if (taken.has(entry.tool.name)) {
      o.logger.warn({ queryId: o.run.queryId, plugin: entry.plugin.name, tool: entry.tool.name }, 'plugin tool left out: another tool of this run has its name');
      continue;
    }
    taken.add(entry.tool.name);
    offered.set(entry.tool.name, entry);
  }
  const definitions: ToolDefinition[] = [...offered.values()].map(({ tool }) => ({ type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters } }));
  return {
    definitions: () => definitions,
    call: async (name, args) => {
      const entry = offered.get(name);
      if (!entry) throw new ToolNotFoundError(name);
      const result = await port.callTool(entry.plugin, { ...o.run, tool: name, arguments: args });
      const parts = typeof result.content === 'string' ? [{ type: 'text' as const, text: result.content }] : result.content;
      if (result.is_error) throw new PluginToolFailure(parts.map((p) => (p.type === 'text' ? p.text : '')).join('\n') || `${name} failed`);
      return new ContentResult(parts);
    },
  };
}
