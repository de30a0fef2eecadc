// The sandbox role's parts, wired by services/sandbox.
export { Bubblewrap, DEFAULT_EXEC_LIMITS, killSandbox, type BubblewrapOptions, type ExecLimits, type ExecSpec } from './bubblewrap.js';
export { LocalCopies, WorkspaceFullError, type LocalCopiesOptions, type WorkspaceCopy } from './local-copies.js';
export { SandboxServer, type SandboxServerOptions } from './sandbox-server.js';
export { WorkspaceBusyError, WorkspaceLeases, type WorkspaceLeaseOptions } from './workspace-lease.js';
export { WorkspaceFs, WorkspaceFsError, measureWorkspace, type WorkspaceSize } from './workspace-fs.js';
export { WorkspaceExpiry, type WorkspaceExpiryOptions } from './expiry.js';
export { McpProcessHost, type McpProcessHostOptions } from './mcp-host.js';
