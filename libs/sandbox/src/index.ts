// The package's public surface for runners: the client of the sandbox role. Skill packages and
// archives are the `./skills` entry (the admin API and the configuration use them); the role's own
// parts (bubblewrap, workspace copies, the server) are the `./server` entry.
export { SandboxClient, SandboxUnreachableError, type SandboxClientOptions } from './client.js';
export { SandboxMcpTransport, type SandboxMcpTransportOptions } from './mcp-transport.js';
export { SANDBOX_METRICS } from './metrics.js';
