// The service kit's public surface: what a service's main.ts, module and providers wire. Everything
// else (the consume-loop adapter, the Redis options, the shutdown plumbing) stays inside the package.

// Starting a service: its settings, its connections, its consumers.
export { BaseEnv, EnvError, loadEnv, type ServiceEnv } from './env.js';
export { runService, type ServiceDefinition } from './bootstrap.js';
export { type RawRoutes, writeJson, writeText } from './raw-routes.js';
export { type Infra, type InfraOptions } from './infra.js';
export { INFRA } from './infra.module.js';
export { duplicateClient, type RedisClient } from './redis.js';
export { JetStreamTransport, RoleHandler, type RoleConsumers, type RoleConsumerSettings } from './jetstream-transport.js';
export { type Role, type RoleConsumerInfra } from './role-consumer.js';
export { isDependencyOutage } from './outage.js';

// The HTTP surface's guards.
export { BearerToken, MIN_BEARER_TOKEN_CHARS } from './bearer-token.js';
export { OPEN_ROUTE, OpenRoute } from './open-route.js';

// Shared by several roles until they find a home of their own.
export { PluginRuntime } from './plugin-runtime.js';
