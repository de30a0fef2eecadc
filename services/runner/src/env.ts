import { z } from 'zod';
import type { Infra, ServiceEnv } from '@conveyor/service-kit';

/** An empty value counts as unset, as compose's `${NAME:-}` and an empty Secret key hand it over. */
const unsetWhenEmpty = (value: unknown) => (value === '' ? undefined : value);

export const RunnerEnv = z.object({
  /** Runs this replica executes at once; it pulls no more than this from the shared consumer. */
  RUNNER_CONCURRENCY: z.coerce.number().int().min(1).max(100_000).default(32),
  /**
   * Overrides the runner consumer's ack wait (default: the topology's 60 s). How long a dead runner's
   * run waits before another replica gets it; heartbeats go out every third of it. Tests shorten it.
   */
  RUNNER_ACK_WAIT_MS: z.coerce.number().int().min(1_000).max(3_600_000).optional(),
  /**
   * Where stdio MCP servers run. `sandbox` (the default): in the sandbox role, under bubblewrap like
   * the agent's commands, with any command. `runner`: in this process's host, as its user, and only
   * with a command MCP_STDIO_COMMANDS lists (for a deployment without the sandbox role).
   */
  MCP_STDIO_IN: z.preprocess(unsetWhenEmpty, z.enum(['sandbox', 'runner']).default('sandbox')),
  /**
   * How often the runner tells the sandbox it still holds each MCP server it started there; the
   * sandbox stops a server after four missed (a runner that died leaves nothing running for long).
   */
  MCP_SANDBOX_KEEPALIVE_MS: z.coerce.number().int().min(100).max(60_000).default(15_000),
  /**
   * With MCP_STDIO_IN=runner: the commands stdio MCP servers may be started with, comma-separated,
   * each compared exactly with a server's `command` (a name on PATH or an absolute path). Empty or
   * unset: stdio servers are off. Such a server runs as the runner's user, so this list is what an
   * MCP server's author may run.
   */
  MCP_STDIO_COMMANDS: z.string().default('').transform((v) => v.split(',').map((s) => s.trim()).filter(Boolean)),
  /** MCP `tools/call` timeout (LangBot: 300 s; 0 disables it). */
  MCP_TOOL_CALL_TIMEOUT_MS: z.coerce.number().int().min(0).max(3_600_000).default(300_000),
  /** Reading one image URL before a model call, redirects and body included. */
  ATTACHMENT_FETCH_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  /** Bytes of one image; the body is not read past this (base64 in the model request is a third larger). */
  ATTACHMENT_MAX_BYTES: z.coerce.number().int().min(1_024).max(50 * 1_048_576).default(5 * 1_048_576),
  /** Image URLs read per run (history included), newest first; older ones are left out. */
  ATTACHMENT_MAX_IMAGES: z.coerce.number().int().min(0).max(64).default(4),
  ATTACHMENT_MAX_REDIRECTS: z.coerce.number().int().min(0).max(10).default(3),
  /** Let image URLs reach loopback and private networks (off: a sender could make the runner read internal services). */
  ATTACHMENT_ALLOW_PRIVATE_NETWORK: z.preprocess(unsetWhenEmpty, z.stringbool().default(false)),
  /**
   * The OpenTelemetry GenAI conventions' opt-in: prompts, answers and system instructions on the model
   * call spans (gen_ai.input.messages, gen_ai.output.messages, gen_ai.system_instructions). Off by
   * default: they hold what users wrote, and trace backends are seldom held to the database's rules.
   */
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: z.preprocess(unsetWhenEmpty, z.stringbool().default(false)),
  /**
   * What a sandbox call may take besides its command's own time limit: a free slot on a sandbox
   * replica, the workspace's lease, unpacking and storing it. Past it the call fails as unanswered.
   */
  SANDBOX_CALL_OVERHEAD_MS: z.coerce.number().int().min(1_000).max(600_000).default(30_000),
  /** Knowledge base documents one replica ingests at once. */
  INGEST_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2),
  /** How often a replica publishes the jobs of documents still pending (added by setup, or a lost publish). */
  KNOWLEDGE_SWEEP_MS: z.coerce.number().int().min(100).max(3_600_000).default(10_000),
});
export type RunnerEnv = z.infer<typeof RunnerEnv>;

/** The runner's connections and settings, as `runService` builds them from `RunnerEnv`. */
export type RunnerInfra = Infra<ServiceEnv<typeof RunnerEnv>>;
