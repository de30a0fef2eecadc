import { z } from 'zod';

const V1 = z.literal(1);
const KIB = 1024;
const MIB = 1024 * KIB;

/**
 * Bounds of the sandbox role. The tool bounds are LangBot's (`loaders/native.py`); the byte bounds keep
 * every request and answer inside the bus bound (NATS' default max_payload, 1 MiB).
 */
export const SANDBOX_LIMITS = {
  /** Bytes of one tool result the model sees; the rest is cut with a note. */
  toolResultBytes: 50 * KIB,
  /** `exec`'s `timeout_sec` when the model gives none, and its upper bound. */
  execTimeoutSecondsDefault: 30,
  execTimeoutSecondsMax: 300,
  /** Characters of one `exec` command. */
  commandChars: 16 * KIB,
  /** Variables of one `exec` call's `env`, and characters of each name and value. */
  envEntries: 64,
  envChars: 4 * KIB,
  /** `read`: lines returned when the model asks for none, and the most it may ask for. */
  readLinesDefault: 2000,
  readLinesMax: 10_000,
  /** Bytes of a file `read`, `edit` or `grep` open. */
  readFileBytes: 8 * MIB,
  /** Bytes of `write` content and of an `edit`'s strings (they travel in one request). */
  writeBytes: 512 * KIB,
  globMatches: 100,
  grepMatches: 200,
  grepFiles: 5000,
  grepLineChars: 500,
  grepPatternChars: 1024,
  /** Entries a walk of the workspace (glob, grep, size check) visits before it stops. */
  walkEntries: 100_000,
  /** Files moved in one `put` or `take` (files in and out of the chat), and their bytes together. */
  transferFiles: 8,
  transferBytes: 640 * KIB,
  /** Characters of a path the tools take. */
  pathChars: 4096,
  /** Characters of a workspace id (the rendered `box-session-id-template`, with the pipeline id). */
  workspaceIdChars: 512,
  /** Skills mounted into one call. */
  skillsPerCall: 64,
  /** Bytes of one request or answer on the bus. */
  messageBytes: 1 * MIB,
} as const;

/**
 * LangBot's `local-agent.box-session-id-template`: which conversations share one workspace. `{global}`
 * is one workspace for the pipeline, `{query_id}` one per message.
 */
export const BOX_SESSION_TEMPLATES = [
  '{global}',
  '{launcher_type}_{launcher_id}',
  '{launcher_type}_{launcher_id}_{sender_id}',
  '{launcher_type}_{launcher_id}_{conversation_id}',
  '{query_id}',
] as const;
export const BoxSessionTemplate = z.enum(BOX_SESSION_TEMPLATES);
export type BoxSessionTemplate = z.infer<typeof BoxSessionTemplate>;

/** A skill's name as the open Agent Skills format has it: lowercase letters, digits and hyphens. */
export const SkillName = z.string().regex(/^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/, 'a skill name is 1 to 64 lowercase letters, digits and hyphens, starting and ending with a letter or digit');
export type SkillName = z.infer<typeof SkillName>;

export const WorkspaceId = z.string().min(1).max(SANDBOX_LIMITS.workspaceIdChars);

/**
 * A file moving between the chat and a workspace: one the user sent (put in the inbox before the
 * run) or one the agent left in its outbox (sent with the answer). Images travel as `Image`
 * components, anything else as `File`.
 */
export const ChatAttachment = z.object({
  name: z.string().min(1).max(255),
  mime: z.string().max(255),
  /** The bytes; empty for a user's image the platform only linked to (`url`), which the runner reads. */
  base64: z.string().max(Math.ceil((SANDBOX_LIMITS.transferBytes * 4) / 3) + 4),
  url: z.string().max(4096).optional(),
});
export type ChatAttachment = z.infer<typeof ChatAttachment>;

/**
 * What a run may do in the sandbox: the workspace it works in (resolved by the orchestrator from the
 * pipeline's template and the message), whether its commands reach the network, and which installed
 * skills it may activate (`all`, or these names).
 */
export const SandboxBinding = z.object({
  workspace: WorkspaceId,
  network: z.boolean().default(false),
  skills: z.union([z.literal('all'), z.array(SkillName).max(256)]).default('all'),
  /** The files the user sent with the message, put in `/workspace/inbox/<query id>/` before the run. */
  inbox: z.array(ChatAttachment).max(SANDBOX_LIMITS.transferFiles).optional(),
});
export type SandboxBinding = z.infer<typeof SandboxBinding>;

const WorkspacePath = z.string().min(1).max(SANDBOX_LIMITS.pathChars);
const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/);

/** One operation on a workspace; the tool arguments the model gave, checked. */
export const SandboxOp = z.discriminatedUnion('op', [
  z.object({
    op: z.literal('exec'),
    command: z.string().min(1).max(SANDBOX_LIMITS.commandChars),
    workdir: WorkspacePath.default('/workspace'),
    timeoutSec: z.number().int().min(1).max(SANDBOX_LIMITS.execTimeoutSecondsMax).default(SANDBOX_LIMITS.execTimeoutSecondsDefault),
    env: z.record(EnvName, z.string().max(SANDBOX_LIMITS.envChars)).refine((e) => Object.keys(e).length <= SANDBOX_LIMITS.envEntries, `at most ${SANDBOX_LIMITS.envEntries} variables`).default({}),
  }),
  z.object({
    op: z.literal('read'),
    path: WorkspacePath,
    /** The first line returned, 1-based. */
    offset: z.number().int().min(1).default(1),
    limit: z.number().int().min(1).max(SANDBOX_LIMITS.readLinesMax).default(SANDBOX_LIMITS.readLinesDefault),
  }),
  z.object({
    op: z.literal('write'),
    path: WorkspacePath,
    content: z.string().max(SANDBOX_LIMITS.writeBytes),
    mode: z.enum(['overwrite', 'append']).default('overwrite'),
  }),
  z.object({
    op: z.literal('edit'),
    path: WorkspacePath,
    oldString: z.string().min(1).max(SANDBOX_LIMITS.writeBytes),
    newString: z.string().max(SANDBOX_LIMITS.writeBytes),
  }),
  z.object({ op: z.literal('glob'), pattern: z.string().min(1).max(1024), path: WorkspacePath.default('/workspace') }),
  z.object({
    op: z.literal('grep'),
    pattern: z.string().min(1).max(SANDBOX_LIMITS.grepPatternChars),
    path: WorkspacePath.default('/workspace'),
    include: z.string().max(1024).optional(),
  }),
  /** Files from the chat written into the workspace (the user's attachments). */
  z.object({
    op: z.literal('put'),
    files: z.array(z.object({ path: WorkspacePath, base64: z.string() })).min(1).max(SANDBOX_LIMITS.transferFiles),
  }),
  /** The files under a folder, read and removed (the agent's outbox, sent to the chat). */
  z.object({ op: z.literal('take'), path: WorkspacePath }),
]);
export type SandboxOp = z.infer<typeof SandboxOp>;
export type SandboxOpName = SandboxOp['op'];

/** Operations that change nothing: a call that got no answer may be sent again, to any replica. */
export const REPEATABLE_SANDBOX_OPS: ReadonlySet<SandboxOpName> = new Set(['read', 'glob', 'grep']);

/** An installed skill a call mounts read-only at `/skills/<name>`, at the revision the caller saw. */
export const MountedSkill = z.object({ name: SkillName, revision: z.number().int().min(1) });
export type MountedSkill = z.infer<typeof MountedSkill>;

/** Core NATS request to the sandbox role (queue group `sandbox`): one operation on one workspace. */
export const SandboxRequest = z.object({
  v: V1,
  workspace: WorkspaceId,
  network: z.boolean().default(false),
  skills: z.array(MountedSkill).max(SANDBOX_LIMITS.skillsPerCall).default([]),
  /** The query the call serves, for logs. */
  queryId: z.string().max(200).optional(),
  call: SandboxOp,
}).meta({ id: 'SandboxRequest/1' });
export type SandboxRequest = z.infer<typeof SandboxRequest>;
export type SandboxRequestInput = z.input<typeof SandboxRequest>;

/** Which limit stopped a command: each is counted by the sandbox (`conveyor_sandbox_limits_hit`). */
export const SandboxLimit = z.enum(['wall_time', 'cpu_time', 'memory', 'file_size', 'processes', 'output', 'workspace_size']);
export type SandboxLimit = z.infer<typeof SandboxLimit>;

export const ExecResult = z.object({
  exitCode: z.number().int().nullable(),
  signal: z.string().nullable(),
  stdout: z.string(),
  stderr: z.string(),
  durationMs: z.number(),
  /** Bytes the command wrote to stdout and stderr, before any cut. */
  outputBytes: z.number().int(),
  limits: z.array(SandboxLimit).default([]),
});
export type ExecResult = z.infer<typeof ExecResult>;

export const TransferredFile = z.object({ path: z.string(), bytes: z.number().int(), base64: z.string() });
export type TransferredFile = z.infer<typeof TransferredFile>;

/**
 * Why a call failed, by code: `invalid` (the request), `refused` (a path outside the workspace, a
 * write to a skill), `not_found`, `limit` (the workspace grew past its cap; the call's changes were
 * undone), `busy` (another call held the workspace too long), `unavailable` (storage down), `internal`.
 */
export const SandboxFailure = z.enum(['invalid', 'refused', 'not_found', 'limit', 'busy', 'unavailable', 'internal']);
export type SandboxFailure = z.infer<typeof SandboxFailure>;

export const SandboxReply = z.discriminatedUnion('ok', [
  z.object({
    v: V1,
    ok: z.literal(true),
    /** The op's answer: `ExecResult` for exec, text for read, glob and grep, a note for write and edit, files for take. */
    exec: ExecResult.optional(),
    text: z.string().optional(),
    files: z.array(TransferredFile).optional(),
    /** The workspace's revision after the call (raised when the call changed it). */
    revision: z.number().int().min(0),
  }),
  z.object({ v: V1, ok: z.literal(false), code: SandboxFailure, error: z.string().max(4096), limit: SandboxLimit.optional() }),
]).meta({ id: 'SandboxReply/1' });
export type SandboxReply = z.infer<typeof SandboxReply>;

// ---------------------------------------------------------------- stdio MCP servers in the sandbox

/** Bounds of stdio MCP servers run by the sandbox role. */
export const SANDBOX_MCP_LIMITS = {
  /** Arguments of the command, and characters of each. */
  args: 64,
  argChars: 4 * KIB,
  /** How often a runner sends a keepalive to a process it holds, unless it says otherwise at the start. */
  keepaliveMs: 15_000,
  /** Keepalive periods with nothing from the runner after which its process is stopped (the runner is gone). */
  idleKeepalives: 4,
  /** Characters of the stderr tail reported when a process exits. */
  stderrTailChars: 2 * KIB,
} as const;

/** The id of one MCP process, chosen by the runner that opens it (a UUID). */
export const McpProcessId = z.string().regex(/^[0-9a-f-]{36}$/, 'an MCP process id is a UUID');

/**
 * Core NATS request (queue group `sandbox`): start a stdio MCP server under bubblewrap. The runner
 * has already subscribed to the process's output subject; the replica answers once the process is
 * started, then relays its stdout lines there.
 */
export const SandboxMcpOpen = z.object({
  v: V1,
  processId: McpProcessId,
  /** The MCP server's name, for logs and metrics. */
  server: z.string().min(1).max(200),
  command: z.string().min(1).max(SANDBOX_MCP_LIMITS.argChars),
  args: z.array(z.string().max(SANDBOX_MCP_LIMITS.argChars)).max(SANDBOX_MCP_LIMITS.args).default([]),
  env: z.record(EnvName, z.string().max(SANDBOX_LIMITS.envChars)).refine((e) => Object.keys(e).length <= SANDBOX_LIMITS.envEntries, `at most ${SANDBOX_LIMITS.envEntries} variables`).default({}),
  /** Whether the process reaches the network: on by default, as `npx -y` and `uvx` servers install their packages at start. */
  network: z.boolean().default(true),
  /** How often the runner will send a keepalive; the process is stopped after `idleKeepalives` of them missed. */
  keepaliveMs: z.number().int().min(100).max(60_000).default(SANDBOX_MCP_LIMITS.keepaliveMs),
}).meta({ id: 'SandboxMcpOpen/1' });
export type SandboxMcpOpen = z.infer<typeof SandboxMcpOpen>;
export type SandboxMcpOpenInput = z.input<typeof SandboxMcpOpen>;

export const SandboxMcpOpenReply = z.discriminatedUnion('ok', [
  z.object({ v: V1, ok: z.literal(true) }),
  z.object({ v: V1, ok: z.literal(false), code: SandboxFailure, error: z.string().max(4096) }),
]).meta({ id: 'SandboxMcpOpenReply/1' });
export type SandboxMcpOpenReply = z.infer<typeof SandboxMcpOpenReply>;

/**
 * Core NATS request to a process's input subject: one JSON-RPC message for its stdin, or none (a
 * keepalive). Answered `{ok: true}` once written; no responders means the process is gone.
 */
export const SandboxMcpInput = z.object({
  v: V1,
  message: z.unknown().optional(),
  /** The runner is done with the process: stop it now rather than after the idle time. */
  close: z.literal(true).optional(),
}).meta({ id: 'SandboxMcpInput/1' });
export type SandboxMcpInput = z.infer<typeof SandboxMcpInput>;

/** Core NATS, on a process's output subject: one JSON-RPC message it wrote, or its end. */
export const SandboxMcpOutput = z.union([
  z.object({ v: V1, message: z.unknown() }),
  z.object({
    v: V1,
    /**
     * Why it ended: it exited, its runner closed it or went quiet, it broke the relay's bounds (a line
     * over the bus bound, input it did not read), or its replica stopped.
     */
    closed: z.object({
      reason: z.enum(['exited', 'closed', 'idle', 'protocol', 'stopping']),
      exitCode: z.number().int().nullable(),
      signal: z.string().nullable(),
      stderrTail: z.string().max(SANDBOX_MCP_LIMITS.stderrTailChars),
    }),
  }),
]).meta({ id: 'SandboxMcpOutput/1' });
export type SandboxMcpOutput = z.infer<typeof SandboxMcpOutput>;
