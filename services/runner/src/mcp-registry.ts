import { Inject, Injectable } from '@nestjs/common';
import { CONFIG_CACHE_SAFETY_TTL_MS, type ToolBinding } from '@conveyor/contracts';
import { INFRA } from '@conveyor/service-kit';
import { emptyToolBox, filterToolBox, McpPool, type McpServerConfig, type ToolBox } from '@conveyor/agent';
import type { RunnerInfra } from './env.js';

/** McpServer rows are re-read when a `ConfigChanged` event names one, else at most this often; a changed row replaces its session. */
const ROWS_TTL_MS = CONFIG_CACHE_SAFETY_TTL_MS;

/** The MCP sessions of this runner process, shared by all its runs. */
@Injectable()
export class McpRegistry {
  private readonly pool: McpPool;
  private loadedAt = 0;
  private loading: Promise<void> | undefined;

  constructor(@Inject(INFRA) private readonly infra: RunnerInfra) {
    const { env } = infra;
    this.pool = new McpPool({
      logger: infra.logger,
      connectTimeoutMs: 30_000,
      callTimeoutMs: env.MCP_TOOL_CALL_TIMEOUT_MS,
      toolsTtlMs: 60_000,
      stdioCommands: env.MCP_STDIO_COMMANDS,
    });
    if (env.MCP_STDIO_COMMANDS.length === 0) infra.logger.info('stdio MCP servers are off (MCP_STDIO_COMMANDS is empty)');
    infra.configCaches.register((event) => {
      if (!event || event.kind === 'mcp-server') this.loadedAt = 0;
    });
  }

  /** The tools a run may use under its binding (absent: every enabled server, every tool). */
  async toolBox(binding: ToolBinding | undefined): Promise<ToolBox> {
    const servers = binding?.mcpServers ?? 'all';
    if (Array.isArray(servers) && servers.length === 0) return emptyToolBox;
    await this.refreshRows();
    const box = await this.pool.toolBox(servers);
    return binding && !binding.enableAllTools ? filterToolBox(box, binding.tools) : box;
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  private async refreshRows(): Promise<void> {
    if (Date.now() - this.loadedAt < ROWS_TTL_MS) return;
    this.loading ??= (async () => {
      try {
        const rows = await this.infra.prisma.mcpServer.findMany({ where: { enabled: true }, orderBy: { id: 'asc' } });
        const configs: McpServerConfig[] = rows
          .filter((r) => ['stdio', 'http', 'sse'].includes(r.transport))
          .map((r) => ({ id: r.id, name: r.name, transport: r.transport as McpServerConfig['transport'], config: (r.config ?? {}) as Record<string, unknown> }));
        this.pool.sync(configs);
        this.loadedAt = Date.now();
      } finally {
        this.loading = undefined;
      }
    })();
    await this.loading;
  }
}
