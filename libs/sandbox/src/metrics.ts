import { metrics, type Counter, type Histogram, type UpDownCounter } from '@opentelemetry/api';

/** Seconds: a command runs from milliseconds to minutes. */
const CALL_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export const SANDBOX_METRICS = {
  /** Sandbox calls by op and outcome (ok or the failure code), counted by the replica that ran them. */
  calls: 'conveyor_sandbox_calls',
  callDuration: 'conveyor_sandbox_call_duration_seconds',
  /** Limits a call reached, by limit (wall_time, cpu_time, memory, file_size, processes, output, workspace_size). */
  limitsHit: 'conveyor_sandbox_limits_hit',
  /** Workspaces unpacked from Postgres because this replica's copy was missing or older. */
  restores: 'conveyor_sandbox_workspace_restores',
  /** Workspaces deleted after their idle time. */
  expired: 'conveyor_sandbox_workspaces_expired',
  /** The runner's side: calls by op and result (ok, a failure code, timeout, no_responders). */
  clientCalls: 'conveyor_sandbox_client_calls',
  /** Stdio MCP servers running on this replica. */
  mcpProcesses: 'conveyor_sandbox_mcp_processes',
  /** Stdio MCP servers ended, by reason (exited, closed, idle, protocol, stopping). */
  mcpExits: 'conveyor_sandbox_mcp_exits',
} as const;

interface SandboxInstruments {
  calls: Counter;
  callDuration: Histogram;
  limitsHit: Counter;
  restores: Counter;
  expired: Counter;
  clientCalls: Counter;
  mcpProcesses: UpDownCounter;
  mcpExits: Counter;
}

let instruments: SandboxInstruments | undefined;

/** Looked up lazily, so a meter provider registered after import is used. */
export function sandboxMetrics(): SandboxInstruments {
  if (instruments) return instruments;
  const meter = metrics.getMeter('@conveyor/sandbox');
  instruments = {
    calls: meter.createCounter(SANDBOX_METRICS.calls, { description: 'Sandbox calls run, by op and outcome' }),
    callDuration: meter.createHistogram(SANDBOX_METRICS.callDuration, { description: 'Time a sandbox replica spent on a call, lease and storage included', unit: 's', advice: { explicitBucketBoundaries: CALL_BUCKETS_SECONDS } }),
    limitsHit: meter.createCounter(SANDBOX_METRICS.limitsHit, { description: 'Sandbox limits reached, by limit' }),
    restores: meter.createCounter(SANDBOX_METRICS.restores, { description: 'Workspaces unpacked from storage onto a replica' }),
    expired: meter.createCounter(SANDBOX_METRICS.expired, { description: 'Workspaces deleted after their idle time' }),
    clientCalls: meter.createCounter(SANDBOX_METRICS.clientCalls, { description: 'Sandbox calls made by runners, by op and result' }),
    mcpProcesses: meter.createUpDownCounter(SANDBOX_METRICS.mcpProcesses, { description: 'Stdio MCP servers running on this sandbox replica' }),
    mcpExits: meter.createCounter(SANDBOX_METRICS.mcpExits, { description: 'Stdio MCP servers ended in the sandbox, by reason' }),
  };
  return instruments;
}
