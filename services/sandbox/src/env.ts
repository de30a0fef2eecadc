import { tmpdir } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import type { Infra, ServiceEnv } from '@conveyor/service-kit';

const MIB = 1024 * 1024;
const int = (min: number, max: number, fallback: number) => z.coerce.number().int().min(min).max(max).default(fallback);

export const SandboxEnv = z.object({
  /**
   * Where this replica keeps its copies of workspaces and skills (an emptyDir in Kubernetes). Unset: a
   * folder of this process under the system's temporary folder, removed when it stops.
   */
  SANDBOX_DIR: z.string().min(1).default(() => path.join(tmpdir(), `conveyor-sandbox-${process.pid}`)),
  /** Calls one replica runs at once, and calls that may wait for a slot; past both a call is answered `busy`. */
  SANDBOX_CONCURRENCY: int(1, 1024, 8),
  SANDBOX_QUEUED: int(0, 100_000, 64),
  /** What one workspace may hold, unpacked; a call that grows it past this has its changes undone. */
  SANDBOX_WORKSPACE_MAX_BYTES: int(1024, 16 * 1024 * MIB, 64 * MIB),
  SANDBOX_WORKSPACE_MAX_FILES: int(1, 1_000_000, 10_000),
  /** A workspace unused this long is deleted (LangBot keeps a session's box while it is used). */
  SANDBOX_WORKSPACE_IDLE_SECONDS: int(60, 365 * 86_400, 3 * 86_400),
  /** Workspaces whose copies one replica keeps between calls (each one's folder stays on disk). */
  SANDBOX_LOCAL_WORKSPACES: int(1, 100_000, 256),
  /** A workspace lease's time to live (renewed while its call runs) and how long a call waits for one. */
  SANDBOX_LEASE_TTL_MS: int(1_000, 600_000, 10_000),
  SANDBOX_LEASE_WAIT_MS: int(0, 600_000, 20_000),
  /** Rlimits of every command: CPU seconds, address space, processes, file size, open files. */
  SANDBOX_CPU_SECONDS: int(1, 3_600, 60),
  SANDBOX_MEMORY_MB: int(64, 65_536, 2_048),
  SANDBOX_PROCESSES: int(8, 65_536, 256),
  SANDBOX_FILE_MB: int(1, 65_536, 64),
  SANDBOX_OPEN_FILES: int(16, 65_536, 256),
  /** Size of a command's private /tmp (memory-backed). */
  SANDBOX_TMP_MB: int(1, 65_536, 64),
  /** Output kept of a command's stdout and of its stderr (the model sees at most 50 KiB of both). */
  SANDBOX_OUTPUT_KB: int(1, 65_536, 1_024),
  /**
   * Host user and group commands run as when the service runs as root (files they write belong to
   * it). Never 0. As any other user the service runs commands as itself, in their own user namespace.
   */
  SANDBOX_RUN_AS_UID: int(1, 4_294_967_294, 60_000),
  SANDBOX_RUN_AS_GID: int(1, 4_294_967_294, 60_000),
  /** Stdio MCP servers one replica runs at once (each a long-lived sandbox with the command rlimits). */
  SANDBOX_MCP_PROCESSES: int(0, 10_000, 32),
  /** CPU seconds an MCP server may use in its whole life (it is started again on next use past it). */
  SANDBOX_MCP_CPU_SECONDS: int(1, 1_000_000, 3_600),
  SANDBOX_BWRAP_PATH: z.string().min(1).default('bwrap'),
  SANDBOX_PRLIMIT_PATH: z.string().min(1).default('prlimit'),
});
export type SandboxEnv = z.infer<typeof SandboxEnv>;

export type SandboxInfra = Infra<ServiceEnv<typeof SandboxEnv>>;
