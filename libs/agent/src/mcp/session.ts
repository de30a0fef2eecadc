import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, ToolListChangedNotificationSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { AgentLogger } from '../agent-loop.js';
import type { ContentResult } from '../tools.js';
import { toContentResult } from './content.js';
import { scopedSignal } from '../scoped-signal.js';

/**
 * An McpServer row. `config`: stdio `{command, args?, env?, cwd?, network?}` (`network` only where the
 * server runs in the sandbox: on unless false); http/sse `{url, headers?}`.
 */
export interface McpServerConfig {
  id: string;
  name: string;
  transport: 'stdio' | 'http' | 'sse';
  config: Record<string, unknown>;
}

export interface McpSessionOptions {
  logger: AgentLogger;
  /**
   * The commands a stdio server may be started with, compared with its `command` exactly (a name
   * looked up on PATH, or an absolute path); empty means stdio servers are not started at all. An
   * MCP server's command runs as the runner's user, so whoever may write MCP servers may otherwise
   * run anything on every runner. Absent: none.
   */
  stdioCommands?: readonly string[];
  /**
   * Where stdio servers run instead of in this process: given, every stdio server is started through
   * the transport it makes (the sandbox role, which isolates it, so `stdioCommands` does not apply).
   */
  stdioTransport?: (server: McpServerConfig, spec: StdioServerSpec) => Transport;
  connectTimeoutMs: number;
  /** 0 disables the timeout (LangBot's `tool_call_timeout_sec = 0`). */
  callTimeoutMs: number;
  /** Tool lists are refetched after this even without a list_changed notification. */
  toolsTtlMs: number;
  /** Reconnect backoff after failed connects: 2, 4, 8 … s, capped (LangBot uses 2, 4, 8 s). */
  backoffMs?: (failures: number) => number;
  maxListPages?: number;
}

const defaultBackoff = (failures: number) => Math.min(60_000, 1_000 * 2 ** failures);

/** A stdio server's start: its command and arguments, its declared environment and whether it reaches the network. */
export interface StdioServerSpec {
  command: string;
  args: string[];
  env: Record<string, string>;
  network: boolean;
}

/** A stdio server whose command the runner does not allow; recognised by `code`. */
export class McpStdioCommandError extends Error {
  readonly code = 'MCP_STDIO_COMMAND_NOT_ALLOWED';

  constructor(readonly server: string, readonly command: string, allowed: readonly string[]) {
    super(allowed.length === 0
      ? `MCP server ${server}: stdio servers are off on this runner (MCP_STDIO_COMMANDS is empty)`
      : `MCP server ${server}: stdio command ${JSON.stringify(command)} is not in MCP_STDIO_COMMANDS (${allowed.join(', ')})`);
    this.name = 'McpStdioCommandError';
  }
}

/**
 * The only variables of the runner's own environment a stdio server gets, besides what its config
 * declares: enough to find programs and a home directory. (The MCP SDK adds its own fixed set of
 * such harmless ones: LOGNAME, SHELL, TERM, USER.) Everything else (DATABASE_URL, the NATS
 * credentials, CONVEYOR_SECRET_KEY, model keys) stays in the runner.
 */
const INHERITED_ENV = ['PATH', 'HOME'] as const;

/** The environment a stdio server is started with: PATH and HOME from the runner, then its declared `env`. */
export function stdioEnvironment(declared: unknown, runnerEnv: Readonly<Record<string, string | undefined>> = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of INHERITED_ENV) {
    const value = runnerEnv[name];
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...stringRecord(declared) };
}
const CLIENT_INFO = { name: 'conveyor-runner', version: '0.1.0' };

function stringRecord(v: unknown): Record<string, string> | undefined {
  if (!v || typeof v !== 'object') return undefined;
  return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, String(x)]));
}

/** The session died under us: reconnect and try once more (LangBot does this for terminated sessions). */
function isConnectionLost(err: unknown): boolean {
  if (err instanceof McpError && err.code === ErrorCode.ConnectionClosed) return true;
  if (err instanceof StreamableHTTPError && err.code === 404) return true;
  return /not connected|session (not found|terminated|expired)/i.test((err as Error)?.message ?? '');
}

/**
 * One MCP server's session in this runner process, shared by every run. Connects on first use,
 * reconnects after the transport drops, backs off after failed connects (the server's tools are
 * simply missing meanwhile), and caches the tool list.
 */
export class McpSession {
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;
  private failures = 0;
  private retryAt = 0;
  private tools: { list: Tool[]; fetchedAt: number } | undefined;
  private closed = false;

  constructor(readonly server: McpServerConfig, private readonly opts: McpSessionOptions) {}

  /** The server's tools, from cache when fresh; throws when the server cannot be reached now. */
  async listTools(): Promise<Tool[]> {
    if (this.tools && Date.now() - this.tools.fetchedAt < this.opts.toolsTtlMs && this.client) return this.tools.list;
    const client = await this.ensure();
    const list: Tool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < (this.opts.maxListPages ?? 20); page++) {
      const res = await client.listTools(cursor ? { cursor } : {}, { timeout: this.opts.connectTimeoutMs });
      list.push(...res.tools);
      cursor = res.nextCursor;
      if (!cursor) break;
    }
    this.tools = { list, fetchedAt: Date.now() };
    return list;
  }

  async callTool(name: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<ContentResult> {
    const attempt = async () => {
      const client = await this.ensure();
      const timeout = this.opts.callTimeoutMs > 0 ? this.opts.callTimeoutMs : 2 ** 31 - 1;
      // The MCP SDK, like the openai one, leaves its abort listener on the signal it is given.
      const scope = scopedSignal(signal);
      return client.callTool({ name, arguments: args }, undefined, { timeout, ...(scope.signal ? { signal: scope.signal } : {}) }).finally(scope.release);
    };
    let result;
    try {
      result = await attempt();
    } catch (err) {
      if (signal?.aborted || !isConnectionLost(err)) throw err;
      this.opts.logger.warn({ mcpServer: this.server.name, err: (err as Error).message }, 'MCP session lost during a call; reconnecting once');
      await this.drop();
      result = await attempt();
    }
    return toContentResult(result as { content?: unknown; isError?: boolean });
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.drop();
  }

  private async ensure(): Promise<Client> {
    if (this.client) return this.client;
    if (this.closed) throw new Error(`MCP server ${this.server.name} is closed`);
    if (Date.now() < this.retryAt) throw new Error(`MCP server ${this.server.name} unavailable; next connect in ${this.retryAt - Date.now()} ms`);
    this.connecting ??= this.connect().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async connect(): Promise<Client> {
    try {
      const client = await this.open();
      this.failures = 0;
      this.retryAt = 0;
      client.onclose = () => {
        // The transport dropped (server exited, connection lost): the next use reconnects.
        if (this.client === client) {
          this.client = undefined;
          this.tools = undefined;
          if (!this.closed) this.opts.logger.warn({ mcpServer: this.server.name }, 'MCP session closed; will reconnect on next use');
        }
      };
      client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
        this.tools = undefined;
      });
      this.client = client;
      this.opts.logger.info({ mcpServer: this.server.name, transport: this.server.transport }, 'MCP session connected');
      return client;
    } catch (err) {
      this.failures++;
      const wait = (this.opts.backoffMs ?? defaultBackoff)(this.failures);
      this.retryAt = Date.now() + wait;
      this.opts.logger.warn({ mcpServer: this.server.name, err: (err as Error).message, retryInMs: wait }, 'MCP connect failed');
      throw err;
    }
  }

  private async open(): Promise<Client> {
    const c = this.server.config;
    const timeout = this.opts.connectTimeoutMs;
    if (this.server.transport === 'stdio') {
      if (typeof c.command !== 'string') throw new Error(`MCP server ${this.server.name}: stdio config needs a command`);
      const args = Array.isArray(c.args) ? c.args.map(String) : [];
      if (this.opts.stdioTransport) {
        const spec = { command: c.command, args, env: stringRecord(c.env) ?? {}, network: c.network !== false };
        return this.handshake(this.opts.stdioTransport(this.server, spec), timeout);
      }
      const allowed = this.opts.stdioCommands ?? [];
      if (!allowed.includes(c.command)) throw new McpStdioCommandError(this.server.name, c.command, allowed);
      const transport = new StdioClientTransport({
        command: c.command,
        args,
        env: stdioEnvironment(c.env),
        ...(typeof c.cwd === 'string' ? { cwd: c.cwd } : {}),
        stderr: 'ignore',
      });
      return this.handshake(transport, timeout);
    }
    if (typeof c.url !== 'string') throw new Error(`MCP server ${this.server.name}: ${this.server.transport} config needs a url`);
    const url = new URL(c.url);
    const requestInit = { headers: stringRecord(c.headers) ?? {} };
    if (this.server.transport === 'sse') return this.handshake(new SSEClientTransport(url, { requestInit }), timeout);
    try {
      return await this.handshake(new StreamableHTTPClientTransport(url, { requestInit }), timeout);
    } catch (err) {
      // Servers that only speak the older HTTP+SSE transport answer the Streamable POST with 400/404/405.
      if (!(err instanceof StreamableHTTPError) || ![400, 404, 405].includes(err.code ?? 0)) throw err;
      this.opts.logger.info({ mcpServer: this.server.name, status: err.code }, 'Streamable HTTP refused; falling back to SSE');
      return this.handshake(new SSEClientTransport(url, { requestInit }), timeout);
    }
  }

  private async handshake(transport: Transport, timeout: number): Promise<Client> {
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    try {
      await client.connect(transport, { timeout });
      return client;
    } catch (err) {
      await client.close().catch(() => undefined);
      throw err;
    }
  }

  private async drop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.tools = undefined;
    await client?.close().catch(() => undefined);
  }
}
