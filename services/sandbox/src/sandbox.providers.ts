import { chmod, mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { SandboxWorkspaceStore, SkillStore } from '@conveyor/persistence';
import { Bubblewrap, LocalCopies, McpProcessHost, SandboxServer, WorkspaceExpiry, WorkspaceLeases, type ExecLimits } from '@conveyor/sandbox/server';
import { isDependencyOutage } from '@conveyor/service-kit';
import type { SandboxInfra } from './env.js';

const MIB = 1024 * 1024;

/** The command bounds from the settings. */
export function execLimits(env: SandboxInfra['env']): ExecLimits {
  return {
    cpuSeconds: env.SANDBOX_CPU_SECONDS,
    memoryBytes: env.SANDBOX_MEMORY_MB * MIB,
    processes: env.SANDBOX_PROCESSES,
    fileBytes: env.SANDBOX_FILE_MB * MIB,
    openFiles: env.SANDBOX_OPEN_FILES,
    tmpBytes: env.SANDBOX_TMP_MB * MIB,
    outputBytes: env.SANDBOX_OUTPUT_KB * 1024,
  };
}

/**
 * Builds the role from its connections: bubblewrap (checked by running `true` once, so a host that
 * cannot make namespaces fails at start with the reason), the workspace copies, leases, the server,
 * the host of stdio MCP servers and the idle expiry. Returns the stop function.
 */
export async function startSandbox(infra: SandboxInfra): Promise<() => Promise<void>> {
  const { env, logger } = infra;
  const owner = process.getuid?.() === 0 ? { uid: env.SANDBOX_RUN_AS_UID, gid: env.SANDBOX_RUN_AS_GID } : undefined;
  const bubblewrap = new Bubblewrap({ limits: execLimits(env), bwrapPath: env.SANDBOX_BWRAP_PATH, prlimitPath: env.SANDBOX_PRLIMIT_PATH, ...(owner ? { runAs: owner } : {}) });
  const workspaces = new SandboxWorkspaceStore(infra.db);
  const copies = new LocalCopies({
    root: env.SANDBOX_DIR,
    workspaces,
    skills: new SkillStore(infra.db),
    archiver: bubblewrap,
    maxBytes: env.SANDBOX_WORKSPACE_MAX_BYTES,
    maxFiles: env.SANDBOX_WORKSPACE_MAX_FILES,
    maxCopies: env.SANDBOX_LOCAL_WORKSPACES,
    ...(owner ? { owner } : {}),
  });
  await copies.clear();
  await mkdir(env.SANDBOX_DIR, { recursive: true });
  // Commands run as another user (SANDBOX_RUN_AS_UID) and must pass through this folder to their
  // workspace; a folder made 0700 (mktemp, a volume's default) would stop every one of them.
  if (owner) await chmod(env.SANDBOX_DIR, 0o711);
  await selfCheck(bubblewrap, env.SANDBOX_DIR);
  const server = new SandboxServer({
    nc: infra.nc,
    topology: infra.topology,
    logger,
    leases: new WorkspaceLeases(infra.redis, infra.topology.prefix, { ttlMs: env.SANDBOX_LEASE_TTL_MS, waitMs: env.SANDBOX_LEASE_WAIT_MS }),
    copies,
    bubblewrap,
    concurrency: env.SANDBOX_CONCURRENCY,
    queued: env.SANDBOX_QUEUED,
    isOutage: isDependencyOutage,
    ...(owner ? { owner } : {}),
  });
  server.start();
  const mcp = new McpProcessHost({
    nc: infra.nc,
    topology: infra.topology,
    logger,
    bubblewrap,
    limits: { ...execLimits(env), cpuSeconds: env.SANDBOX_MCP_CPU_SECONDS },
    root: path.join(env.SANDBOX_DIR, 'mcp'),
    maxProcesses: env.SANDBOX_MCP_PROCESSES,
    ...(owner ? { owner } : {}),
  });
  await mcp.start();
  const expiry = new WorkspaceExpiry({ store: workspaces, logger, idleMs: env.SANDBOX_WORKSPACE_IDLE_SECONDS * 1000 });
  expiry.start();
  logger.info({ dir: env.SANDBOX_DIR, concurrency: env.SANDBOX_CONCURRENCY, runAs: owner?.uid ?? process.getuid?.() }, 'sandbox serving calls');
  return async () => {
    expiry.stop();
    await mcp.stop();
    await server.stop(env.SHUTDOWN_GRACE_SECONDS * 1000);
    await copies.clear();
    await rm(env.SANDBOX_DIR, { recursive: true, force: true }).catch(() => undefined);
  };
}

async function selfCheck(bubblewrap: Bubblewrap, dir: string): Promise<void> {
  const probe = `${dir}/self-check`;
  await mkdir(probe, { recursive: true });
  await chmod(probe, 0o777);
  try {
    const r = await bubblewrap.run({ workspaceDir: probe, skills: new Map(), command: 'true', workdir: '/workspace', env: {}, timeoutMs: 30_000, network: false });
    if (r.exitCode !== 0) throw new Error(`bubblewrap could not start a sandbox here (exit ${r.exitCode}): ${r.stderr.trim().slice(0, 500)}; it needs unprivileged user namespaces (see docs/SECURITY.md, Sandbox)`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new Error('bubblewrap (bwrap) or util-linux prlimit is not installed: apt install bubblewrap util-linux');
    throw err;
  } finally {
    await rm(probe, { recursive: true, force: true });
  }
}
