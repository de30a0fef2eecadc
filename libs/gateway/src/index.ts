export { ConnectionLease, LeaseLostError, isLeaseLost, type ConnectionLeaseOptions } from './lease.js';
export {
  ConnectionSupervisor,
  type ConnectionSupervisorOptions,
  type ConnectionTarget,
  type LiveConnection,
  type Connect,
  type SupervisorEvents,
  type SupervisorLogger,
} from './supervisor.js';
export { reconnectBackoff, type ReconnectBackoff } from './backoff.js';
export { GatewayRelayAdapter, serveGatewaySends, type GatewayRelayAdapterOptions, type GatewaySendServerOptions } from './relay.js';
