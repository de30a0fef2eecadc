export { connectBus, logConnectionStatus, natsAuthFromEnv, natsServers, redactUrl, type ConnectBusOptions } from './connect.js';
export { BUS_METRICS, DURATION_BUCKETS_SECONDS, observeConsumer, type ObservedConsumer } from './metrics.js';
export { silentLogger, errorFields, type BusLogger } from './logger.js';
export {
  ensureStreams,
  awaitStreams,
  type AwaitStreamsOptions,
  ensureConsumers,
  streamConfigFor,
  consumerConfigFor,
  streamDrift,
  consumerDrift,
  type ManagedStreamConfig,
  type ManagedConsumerConfig,
  type ProvisionOptions,
} from './provision.js';
export { BusPublisher, type PublishOptions, type BusPublisherOptions } from './publish.js';
export {
  startConsumer,
  type StartConsumerOptions,
  type MessageContext,
  type ConsumeContext,
  type MessageHandler,
  type ConsumerHandle,
  type StopOptions,
} from './consume.js';
export {
  buildDeadLetter,
  publishDeadLetter,
  readDeadLetters,
  deadLetterPayload,
  type DeadLetterInput,
  type DeadLetterReason,
} from './dead-letter.js';
export { RetryableError, PermanentError, PayloadValidationError, PayloadTooLargeError, StreamNotProvisionedError, isBusBackpressure, isBrokerUnavailable, isPermissionViolation, isReplicaPlacementError, someCause } from './errors.js';
export { exponentialBackoff, defaultBackoff, type Backoff } from './backoff.js';
export { natsHeaderGetter, natsHeaderSetter, ATTR as MESSAGING_ATTRIBUTES } from './otel.js';
export { subjectMatches } from './subject.js';
export { describeIssues } from './validate.js';
export { KeyedSerial } from './keyed-serial.js';
export { MemoryAttemptStore, NO_ATTEMPT_STORE, previousAttemptLink, type AttemptStore } from './attempt-store.js';
export {
  PluginHost,
  PLUGIN_METRICS,
  classifyRequestError,
  type PluginCallResult,
  type PluginHostOptions,
  type PluginRegistrationState,
  PluginCallError,
  type OfferedPluginCommand,
  type OfferedPluginTool,
} from './plugin-host.js';
export { requestDirectSend, serveDirectSends, DIRECT_SEND_TIMEOUT_MS } from './direct-send.js';
export { PluginHostServer, type PluginHostHandler, type PluginHostServerOptions } from './plugin-host-server.js';
export { publishConfigChanged, subscribeConfigChanges, type ConfigChangeHandlers } from './config-changes.js';
export { publishTakeoverEvent } from './takeover-events.js';
