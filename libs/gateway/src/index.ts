export { ConnectionLease, LeaseLostError, isLeaseLost, readConnectionLease, CONNECTION_STATE_GRACE_MS, type ConnectionLeaseOptions, type LeaseSnapshot } from './lease.js';
export { ConnectionStateStore, ConnectionStateTooLargeError, MAX_CONNECTION_STATE_BYTES, type ConnectionStateStoreOptions } from './state.js';
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
export { ConnectionStateKeeper, SESSION_STORE_EVERY_MS } from './state-keeper.js';
export { SequencedInbound, MAX_QUEUED_INBOUND, type SequencedInboundOptions } from './sequenced-inbound.js';
export { HeartbeatGatewaySocket, GatewaySession, GatewayRefusedError, type HeartbeatGatewayOptions } from './heartbeat-gateway.js';
export { openResumableGateway, type ResumableGateway, type ResumableGatewayOptions, type DispatchedMessage } from './resumable-gateway.js';
