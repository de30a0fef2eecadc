/**
 * The NATS server configuration of a deployment, derived from the broker contract
 * (@conveyor/contracts topology): one user per service, allowed to publish and subscribe only on the
 * subjects its role needs. The committed files (deploy/nats/nats.conf, the dev overlay's copy and the
 * prod cluster component's) are generated from this module, and test/src/deploy/nats-security.test.ts
 * fails when they drift:
 *
 *   node test/dist/deploy/nats-config.js            # rewrite the committed files
 *   node test/dist/deploy/nats-config.js --check    # exit 1 when they are out of date
 *   node test/dist/deploy/nats-config.js --print --plugin my-plugin --no-shared-plugin
 *                                                   # a config giving each named plugin its own user
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { subjectToken, topology, type ConsumerSpec, type Topology } from '@conveyor/contracts';

export type ServiceRole = 'ingress' | 'orchestrator' | 'runner' | 'dispatcher' | 'gateway' | 'admin' | 'sandbox';
export const SERVICE_ROLES: ServiceRole[] = ['ingress', 'orchestrator', 'runner', 'dispatcher', 'gateway', 'admin', 'sandbox'];

export interface Permissions {
  publish: string[];
  subscribe: string[];
  /**
   * May answer a request it received (one reply to the request's reply subject, for a while), without
   * a publish right on every inbox.
   */
  allowResponses?: boolean;
}

/**
 * The JetStream API subjects every service uses at start: account info and each stream's info, to
 * check the streams are as the contract says (a service that finds one missing or different waits
 * for the admin service, the one identity that may create and update them).
 */
function streamApi(topo: Topology): string[] {
  return ['$JS.API.INFO', ...Object.values(topo.streams).map((s) => `$JS.API.STREAM.INFO.${s.name}`)];
}

/** Creating and updating Conveyor's streams (never deleting or purging one): the admin service and its migrate job. */
function streamManagementApi(topo: Topology): string[] {
  return Object.values(topo.streams).flatMap((s) => [`$JS.API.STREAM.CREATE.${s.name}`, `$JS.API.STREAM.UPDATE.${s.name}`]);
}

/** A durable pull consumer: provision and look it up, pull from it, ack/nak/working on its messages. */
function consumerApi(c: ConsumerSpec): string[] {
  return [
    `$JS.API.CONSUMER.INFO.${c.stream}.${c.durable}`,
    `$JS.API.CONSUMER.CREATE.${c.stream}.${c.durable}`,
    `$JS.API.CONSUMER.CREATE.${c.stream}.${c.durable}.>`,
    `$JS.API.CONSUMER.DURABLE.CREATE.${c.stream}.${c.durable}`,
    `$JS.API.CONSUMER.MSG.NEXT.${c.stream}.${c.durable}`,
    `$JS.ACK.${c.stream}.${c.durable}.>`,
  ];
}

/** Reading one stored message by sequence and removing it (not the stream, not a purge). */
function storedMessageApi(stream: string): string[] {
  return [`$JS.API.STREAM.MSG.GET.${stream}`, `$JS.API.STREAM.MSG.DELETE.${stream}`];
}

/** What each role may do. Everything not listed is denied (NATS permissions are allow lists). */
export function servicePermissions(topo: Topology): Record<ServiceRole, Permissions> {
  const { streams, consumers, subjects } = topo;
  // Replies to requests (PubAcks, API responses, pulled messages) arrive on the connection's inbox,
  // under the role's own prefix (no role reads another's); every service drops its cached
  // configuration when a change is announced.
  const subscribe = (role: ServiceRole) => [`${subjects.inboxPrefix(role)}.>`, subjects.configChanged];
  const consuming = (role: 'orchestrator' | 'runner' | 'dispatcher') => [...consumerApi(consumers[role]), subjects.deadLetter(role)];
  // Services that emit plugin events follow the plugins' heartbeats, ask for them at start and call them.
  const pluginHost = { publish: [subjects.plugins.discover, subjects.plugins.allCalls], subscribe: [subjects.plugins.heartbeat] };
  return {
    // Core NATS, to the replica holding the browser's event stream or the waiting `/sync` call
    // (which answers each part, so the dispatcher knows it was taken).
    ingress: {
      publish: [...streamApi(topo), ...streams.queries.subjects],
      subscribe: [...subscribe('ingress'), subjects.allSyncReplies, subjects.allWebchatSessions],
      allowResponses: true,
    },
    // Stage notices go straight to the dispatcher as events; a message waiting for its session is
    // published to the queries again before its deliveries run out.
    orchestrator: {
      publish: [...streamApi(topo), ...consuming('orchestrator'), ...streams.queries.subjects, ...streams.runs.subjects, ...streams.events.subjects, ...pluginHost.publish],
      // It hears the admins' takeover changes: a taken chat is left to its operator.
      subscribe: [...subscribe('orchestrator'), ...pluginHost.subscribe, subjects.takeoverEvents],
    },
    // Runs JetStream gave up on arrive as stored MAX_DELIVERIES advisories (a consumer of their own);
    // the runner reads the abandoned run by its sequence to answer it, then removes it from the runs.
    runner: {
      publish: [
        ...streamApi(topo), ...consuming('runner'), ...consumerApi(consumers.runAdvisories), subjects.deadLetter('runner-advisories'),
        ...storedMessageApi(streams.runs.name), ...streams.events.subjects,
        // Knowledge base ingestion: the runner publishes jobs for pending documents and consumes them.
        ...consumerApi(consumers.ingest), subjects.deadLetter('ingest'), ...streams.ingest.subjects,
        // The agent's code runs in the sandbox role, asked over core NATS request/reply, and so do
        // stdio MCP servers: the runner starts one, writes to it and reads what it writes.
        subjects.sandboxCall, subjects.sandboxMcpOpen, subjects.allSandboxMcpInputs,
        // Plugins' tools: the runner follows their heartbeats and calls them. It answers their host
        // calls, a streamed one with several messages to the calling plugin's inbox, and asks a
        // dispatcher to send a plugin's message to a chat.
        ...pluginHost.publish, subjects.plugins.allInboxes, subjects.directSend,
      ],
      subscribe: [...subscribe('runner'), ...pluginHost.subscribe, subjects.allSandboxMcpOutputs, subjects.plugins.allHosts],
    },
    // Reply parts for a waiting `/sync` call (request/reply) and for web chat sessions, over core NATS.
    // Replicas tell each other which events' parts they sent (core NATS). Parts for a held platform
    // connection are requests to the gateway replica holding it.
    // It also sends messages to chats that answer nothing (plugins' and operators' direct sends),
    // answering each request once.
    dispatcher: {
      publish: [...streamApi(topo), ...consuming('dispatcher'), subjects.allSyncReplies, subjects.allWebchatSessions, subjects.dispatchSent, subjects.allGatewaySends, ...pluginHost.publish],
      subscribe: [...subscribe('dispatcher'), subjects.dispatchSent, ...pluginHost.subscribe, subjects.directSend],
      allowResponses: true,
    },
    // Inbound messages from held platform connections become queries; the replica holding a bot's
    // connection answers the dispatcher's send requests for it.
    gateway: {
      publish: [...streamApi(topo), ...streams.queries.subjects],
      subscribe: [...subscribe('gateway'), subjects.allGatewaySends],
      allowResponses: true,
    },
    // The admin API provisions the streams, announces configuration changes, reads and removes dead
    // letters, and resubmits a dead letter's payload to the stream subject it failed on.
    // The admin lists the plugins from their heartbeats (asking for them at start) and tells a plugin
    // its settings changed; it never calls a plugin. While someone watches live conversations it hears
    // the queries and runner events as they are published (a core subscription, no consumer).
    admin: {
      publish: [
        ...streamApi(topo), ...streamManagementApi(topo), subjects.configChanged, ...storedMessageApi(streams.deadLetters.name),
        ...streams.queries.subjects, ...streams.runs.subjects, ...streams.events.subjects, ...streams.ingest.subjects,
        subjects.plugins.discover, subjects.plugins.allSettingsChanged,
        // Human takeover: it announces takeovers and sends the operators' replies through a dispatcher.
        subjects.takeoverEvents, subjects.directSend,
      ],
      subscribe: [...subscribe('admin'), subjects.plugins.heartbeat, ...streams.queries.subjects, ...streams.events.subjects, subjects.takeoverEvents],
    },
    // Answers the runners' sandbox calls (queue group `sandbox`) and relays the stdio MCP servers it
    // runs; it publishes nothing else: a command it runs has no NATS connection, and its own user
    // could not reach the streams anyway.
    sandbox: {
      publish: [...streamApi(topo), subjects.allSandboxMcpOutputs],
      subscribe: [...subscribe('sandbox'), subjects.sandboxCall, subjects.sandboxMcpOpen, subjects.allSandboxMcpInputs],
      allowResponses: true,
    },
  };
}

/**
 * Plugin processes (any language, any number): they announce themselves on the heartbeat subject,
 * hear a host's discovery call, answer the events sent to their call subjects and call the host API
 * on their host subjects, reading the answers in their inboxes; nothing else, so a plugin cannot read
 * or write the streams, and hear their settings changes. The shared `plugin` user hears every plugin's
 * calls; a plugin with an identity of its own (`name` given) hears only its own and calls the host API
 * only as itself, so it can neither answer another plugin's events nor read or write another plugin's
 * storage or settings.
 */
export function pluginPermissions(topo: Topology, name?: string): Permissions {
  const { plugins } = topo.subjects;
  return name === undefined
    ? { publish: [plugins.heartbeat, plugins.allHosts], subscribe: [plugins.discover, plugins.allCalls, plugins.allInboxes, plugins.allSettingsChanged], allowResponses: true }
    : { publish: [plugins.heartbeat, plugins.host(name)], subscribe: [plugins.discover, plugins.call(name), `${plugins.inboxPrefix(name)}.>`, plugins.settingsChanged(name)], allowResponses: true };
}

/** The NATS user of a plugin with an identity of its own. */
export function pluginUser(name: string): string {
  return `plugin-${subjectToken(name)}`;
}

/** The server environment variable holding that user's password: `NATS_PLUGIN_<NAME>_PASSWORD`. */
export function pluginPasswordVariable(name: string): string {
  return `NATS_PLUGIN_${name.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_PASSWORD`;
}

/** Every user of the generated config: the services, the plugins and the operators. */
export type NatsAccountRole = ServiceRole | 'plugin' | 'ops';

/**
 * Environment variable holding a role's password on the server (nats-server reads `$NAME` from the
 * environment). nats-server parses the value as a config token: a password must start with a letter
 * and contain only letters and digits (`2f9a...` would be read as a number and refused).
 */
export function passwordVariable(role: NatsAccountRole): string {
  return `NATS_${role.toUpperCase()}_PASSWORD`;
}

export interface NatsConfigOptions {
  prefix?: string;
  port?: number;
  /** Monitoring (HTTP) port: /jsz for KEDA's nats-jetstream scaler and /healthz for probes. */
  monitorPort?: number;
  storeDir?: string;
  /** Adds a `tls` block reading the certificate, key and CA from this directory (tls.crt, tls.key, ca.crt). */
  tlsDir?: string;
  /** Plugins given a user of their own (`pluginUser(name)`), each hearing only its own calls. */
  plugins?: readonly string[];
  /** Whether the shared `plugin` user (every plugin's calls) is there too. Default true. */
  sharedPluginUser?: boolean;
  /** One node of a JetStream cluster (see `natsClusterOptions`); without it, a single server. */
  cluster?: NatsClusterOptions;
}

export interface NatsClusterOptions {
  name: string;
  /** The route port every node listens on. */
  port: number;
  /** Every node's route URL (a node finding its own in the list skips it). */
  routes: string[];
  /**
   * The server's name as a config variable: nats-server reads it from its environment, so one file
   * serves every pod (a StatefulSet gives each pod its name).
   */
  serverNameVariable: string;
  /** JetStream's file store limit: below the volume's size, so the store never fills the disk. */
  maxFileStore: string;
  /** Route TLS: the same certificate directory as the clients' (`tlsDir`), each node verifying the other's certificate. */
  routeTls: boolean;
}

/**
 * The prod overlay's NATS (k8s/components/nats-cluster): three pods of the StatefulSet `nats`, each
 * reached at its stable name under the headless Service, in the overlay's namespace.
 */
export function natsClusterOptions(namespace = 'conveyor', size = 3): NatsClusterOptions {
  return {
    name: 'conveyor',
    port: 6222,
    routes: Array.from({ length: size }, (_, i) => `nats-route://nats-${i}.nats-headless.${namespace}.svc.cluster.local:6222`),
    serverNameVariable: 'POD_NAME',
    maxFileStore: '8G',
    routeTls: true,
  };
}

const q = (s: string) => JSON.stringify(s);

export function natsServerConfig(opts: NatsConfigOptions = {}): string {
  const topo = topology(opts.prefix ?? 'conveyor');
  const perms = servicePermissions(topo);
  const pluginNames = opts.plugins ?? [];
  const variables = pluginNames.map(pluginPasswordVariable);
  const clash = variables.find((v, i) => variables.indexOf(v) !== i);
  if (clash) throw new Error(`two plugin names map to the same password variable ${clash}: rename one`);
  const shared = opts.sharedPluginUser ?? true;
  const cluster = opts.cluster;
  const accounts: { user: string; variable: string; p: Permissions }[] = [
    ...SERVICE_ROLES.map((role) => ({ user: role, variable: passwordVariable(role), p: perms[role] })),
    ...(shared ? [{ user: 'plugin', variable: passwordVariable('plugin'), p: pluginPermissions(topo) }] : []),
    ...pluginNames.map((name) => ({ user: pluginUser(name), variable: pluginPasswordVariable(name), p: pluginPermissions(topo, name) })),
  ];
  const users = accounts.map(({ user, variable, p }) => {
    return [
      `    {`,
      `      user: ${q(user)}`,
      `      password: $${variable}`,
      `      permissions: {`,
      `        publish: { allow: [${p.publish.map(q).join(', ')}] }`,
      `        subscribe: { allow: [${p.subscribe.map(q).join(', ')}] }`,
      ...(p.allowResponses ? [`        allow_responses: true`] : []),
      `      }`,
      `    }`,
    ].join('\n');
  });
  // Operators (nats CLI, dead-letter replay, backups): everything.
  users.push([`    {`, `      user: ops`, `      password: $${passwordVariable('ops')}`, `    }`].join('\n'));
  const lines = [
    `# GENERATED from the broker contract (libs/contracts/src/topology.ts, prefix "${topo.prefix}") by`,
    `# test/src/deploy/nats-config.ts: do not edit; run \`node test/dist/deploy/nats-config.js\`.`,
    `# Passwords (letters and digits, starting with a letter) come from the server's environment: ${[...accounts.map((a) => a.variable), passwordVariable('ops')].map((v) => `$${v}`).join(', ')}.`,
    `server_name: ${cluster ? `$${cluster.serverNameVariable}` : 'conveyor-nats'}`,
    `port: ${opts.port ?? 4222}`,
    `http_port: ${opts.monitorPort ?? 8222}`,
    `max_payload: 2MB`,
    `jetstream {`,
    `  store_dir: ${q(opts.storeDir ?? '/data/jetstream')}`,
    ...(cluster ? [`  max_file_store: ${cluster.maxFileStore}`] : []),
    `}`,
  ];
  const tlsFiles = (dir: string, indent: string) => [
    `${indent}cert_file: ${q(path.posix.join(dir, 'tls.crt'))}`,
    `${indent}key_file: ${q(path.posix.join(dir, 'tls.key'))}`,
    `${indent}ca_file: ${q(path.posix.join(dir, 'ca.crt'))}`,
    `${indent}timeout: 2`,
  ];
  if (opts.tlsDir) lines.push(`tls {`, ...tlsFiles(opts.tlsDir, '  '), `}`);
  if (cluster) {
    if (cluster.routeTls && !opts.tlsDir) throw new Error('route TLS needs tlsDir');
    lines.push(
      // Clients get no gossiped node addresses (pod IPs, which change and fail TLS host checks): they
      // use the list they were given, every node's stable name.
      `cluster {`,
      `  name: ${cluster.name}`,
      `  port: ${cluster.port}`,
      `  no_advertise: true`,
      `  routes: [`,
      ...cluster.routes.map((r) => `    ${r}`),
      `  ]`,
      // Routes carry every account's messages unfiltered: only a node with a certificate of the CA joins.
      ...(cluster.routeTls && opts.tlsDir ? [`  tls {`, ...tlsFiles(opts.tlsDir, '    '), `    verify: true`, `  }`] : []),
      `}`,
    );
  }
  lines.push(`authorization {`, `  users: [`, users.join('\n'), `  ]`, `}`, ``);
  return lines.join('\n');
}

/** The config of the prod overlay's cluster nodes (k8s/components/nats-cluster/nats.conf). */
export const PROD_CLUSTER_CONFIG: NatsConfigOptions = { tlsDir: '/etc/nats-tls', cluster: natsClusterOptions() };

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** The committed, generated files and what they must contain. */
export function committedNatsConfigs(): { file: string; content: string }[] {
  return [
    { file: path.join(root, 'deploy/nats/nats.conf'), content: natsServerConfig() },
    { file: path.join(root, 'k8s/overlays/dev/nats/nats.conf'), content: natsServerConfig() },
    { file: path.join(root, 'deploy/nats/nats-tls.conf'), content: natsServerConfig({ tlsDir: '/etc/nats/tls' }) },
    { file: path.join(root, 'k8s/components/nats-cluster/nats.conf'), content: natsServerConfig(PROD_CLUSTER_CONFIG) },
  ];
}

/**
 * `--print [--prefix p] [--tls-dir d] [--plugin name]... [--no-shared-plugin] [--cluster-namespace ns]`:
 * a configuration for your own plugins (or, with `--cluster-namespace`, the cluster component's for
 * another namespace, TLS from /etc/nats/tls unless `--tls-dir` says otherwise), on stdout.
 */
function printedConfig(args: string[]): string {
  const values = (flag: string) => args.flatMap((a, i) => (a === flag && args[i + 1] !== undefined ? [args[i + 1]] : []));
  const namespace = values('--cluster-namespace')[0];
  return natsServerConfig({
    prefix: values('--prefix')[0],
    tlsDir: values('--tls-dir')[0] ?? (namespace ? PROD_CLUSTER_CONFIG.tlsDir : undefined),
    ...(namespace ? { cluster: natsClusterOptions(namespace) } : {}),
    plugins: values('--plugin'),
    sharedPluginUser: !args.includes('--no-shared-plugin'),
  });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url) && process.argv.includes('--print')) {
  process.stdout.write(printedConfig(process.argv.slice(2)));
} else if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes('--check');
  let stale = 0;
  for (const { file, content } of committedNatsConfigs()) {
    let current: string | undefined;
    try {
      current = readFileSync(file, 'utf8');
    } catch {
      current = undefined;
    }
    if (current === content) continue;
    stale++;
    if (check) console.error(`${path.relative(root, file)} is out of date`);
    else {
      writeFileSync(file, content);
      console.log(`wrote ${path.relative(root, file)}`);
    }
  }
  if (check && stale) process.exit(1);
}
