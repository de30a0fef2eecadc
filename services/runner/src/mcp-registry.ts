import { Inject, Injectable } from '@nestjs/common';
import type { ToolBinding } from '@conveyor/contracts';
import type { McpServerEntry } from '@conveyor/config-read-model';
import { INFRA } from '@conveyor/service-kit';
import { emptyToolBox, filterToolBox, McpPool, type McpServerConfig, type StdioServerSpec, type ToolBox } from '@conveyor/agent';
import { SandboxMcpTransport } from '@conveyor/sandbox';
import type { RunnerInfra } from './env.js';

/** The MCP sessions of this runner process, shared by all its runs. */
@Injectable()
export class McpRegistry {
  private readonly pool: McpPool;
  /** The server list the pool was last synced to: the read model hands out a new one after a change. */
  private synced: McpServerEntry[] | undefined;

  constructor(@Inject(INFRA) private readonly infra: RunnerInfra) {
    const { env } = infra;
    const inSandbox = env.MCP_STDIO_IN === 'sandbox';
    this.pool = new McpPool({
      logger: infra.logger,
      // A server started in the sandbox may first install its package (`npx -y`, `uvx`).
      connectTimeoutMs: inSandbox ? 120_000 : 30_000,
      callTimeoutMs: env.MCP_TOOL_CALL_TIMEOUT_MS,
      toolsTtlMs: 60_000,
      stdioCommands: env.MCP_STDIO_COMMANDS,
      ...(inSandbox ? { stdioTransport: (server: McpServerConfig, spec: StdioServerSpec) => new SandboxMcpTransport({ nc: infra.nc, topology: infra.topology, server: { server: server.name, ...spec }, keepaliveMs: env.MCP_SANDBOX_KEEPALIVE_MS }) } : {}),
    });
    if (inSandbox) infra.logger.info('stdio MCP servers run in the sandbox role');
    else if (env.MCP_STDIO_COMMANDS.length === 0) infra.logger.info('stdio MCP servers are off (MCP_STDIO_IN=runner and MCP_STDIO_COMMANDS is empty)');
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

  /** A changed server list (a `config.changed` event or the safety TTL) replaces the changed servers' sessions. */
  private async refreshRows(): Promise<void> {
    const servers = await this.infra.config.mcpServers();
    if (servers === this.synced) return;
    this.pool.sync(servers);
    this.synced = servers;
  }
}
