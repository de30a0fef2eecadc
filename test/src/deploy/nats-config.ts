/**
 * The NATS server configuration of a deployment, derived from the broker contract
 * (@conveyor/contracts topology): one user per service, allowed to publish and subscribe only on the
 * subjects its role needs. The committed files (deploy/nats/nats.conf and the dev overlay's copy) are
 * generated from this module, and test/src/deploy/nats-config.test.ts fails when they drift:
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

export type ServiceRole = 'ingress' | 'orchestrator' | 'runner' | 'dispatcher' | 'gateway' | 'admin';
export const SERVICE_ROLES: ServiceRole[] = ['ingress', 'orchestrator', 'runner', 'dispatcher', 'gateway', 'admin'];

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
      subscribe: [...subscribe('orchestrator'), ...pluginHost.subscribe],
    },
    // Runs JetStream gave up on arrive as stored MAX_DELIVERIES advisories (a consumer of their own);
    // the runner reads the abandoned run by its sequence to answer it, then removes it from the runs.
    runner: {
      publish: [
        ...streamApi(topo), ...consuming('runner'), ...consumerApi(consumers.runAdvisories), subjects.deadLetter('runner-advisories'),
        ...storedMessageApi(streams.runs.name), ...streams.events.subjects,
        // Knowledge base ingestion: the runner publishes jobs for pending documents and consumes them.
        ...consumerApi(consumers.ingest), subjects.deadLetter('ingest'), ...streams.ingest.subjects,
      ],
      subscribe: subscribe('runner'),
    },
    // Reply parts for a waiting `/sync` call (request/reply) and for web chat sessions, over core NATS.
    // Replicas tell each other which events' parts they sent (core NATS). Parts for a held platform
    // connection are requests to the gateway replica holding it.
    dispatcher: {
      publish: [...streamApi(topo), ...consuming('dispatcher'), subjects.allSyncReplies, subjects.allWebchatSessions, subjects.dispatchSent, subjects.allGatewaySends, ...pluginHost.publish],
      subscribe: [...subscribe('dispatcher'), subjects.dispatchSent, ...pluginHost.subscribe],
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
    admin: {
      publish: [
        ...streamApi(topo), ...streamManagementApi(topo), subjects.configChanged, ...storedMessageApi(streams.deadLetters.name),
        ...streams.queries.subjects, ...streams.runs.subjects, ...streams.events.subjects, ...streams.ingest.subjects,
      ],
      subscribe: subscribe('admin'),
    },
  };
}

/**
 * Plugin processes (any language, any number): they announce themselves on the heartbeat subject,
 * hear a host's discovery call and answer the events sent to their call subjects; nothing else, so a
 * plugin cannot read or write the streams. The shared `plugin` user hears every plugin's calls; a
 * plugin with an identity of its own (`name` given) hears only its own, so it can neither read nor
 * answer another plugin's events.
 */
export function pluginPermissions(topo: Topology, name?: string): Permissions {
  const { plugins } = topo.subjects;
  return { publish: [plugins.heartbeat], subscribe: [plugins.discover, name === undefined ? plugins.allCalls : plugins.call(name)], allowResponses: true };
}

/** The NATS user of a plugin with an identity of its own. */
export function pluginUser(name: string): string {
  return `plugin-${subjectToken(name)}`;
}

/** The server environment variable holding that user's password: `NATS_PLUGIN_<NAME>_PASSWORD`. */
export function pluginPasswordVariable(name: string): string {
  return `NATS_PLUGIN_${name.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_PASSWORD`;
}

/** Every user of the generated config: the four services, the plugins and the operators. */
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
    `server_name: conveyor-nats`,
    `port: ${opts.port ?? 4222}`,
    `http_port: ${opts.monitorPort ?? 8222}`,
    `max_payload: 2MB`,
    `jetstream {`,
    `  store_dir: ${q(opts.storeDir ?? '/data/jetstream')}`,
    `}`,
  ];
  if (opts.tlsDir) {
    lines.push(
      `tls {`,
      `  cert_file: ${q(path.posix.join(opts.tlsDir, 'tls.crt'))}`,
      `  key_file: ${q(path.posix.join(opts.tlsDir, 'tls.key'))}`,
      `  ca_file: ${q(path.posix.join(opts.tlsDir, 'ca.crt'))}`,
      `  timeout: 2`,
      `}`,
    );
  }
  lines.push(`authorization {`, `  users: [`, users.join('\n'), `  ]`, `}`, ``);
  return lines.join('\n');
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** The committed, generated files and what they must contain. */
export function committedNatsConfigs(): { file: string; content: string }[] {
  return [
    { file: path.join(root, 'deploy/nats/nats.conf'), content: natsServerConfig() },
    { file: path.join(root, 'k8s/overlays/dev/nats/nats.conf'), content: natsServerConfig() },
    { file: path.join(root, 'deploy/nats/nats-tls.conf'), content: natsServerConfig({ tlsDir: '/etc/nats/tls' }) },
  ];
}

/** `--print [--prefix p] [--tls-dir d] [--plugin name]... [--no-shared-plugin]`: a configuration for your own plugins, on stdout. */
function printedConfig(args: string[]): string {
  const values = (flag: string) => args.flatMap((a, i) => (a === flag && args[i + 1] !== undefined ? [args[i + 1]] : []));
  return natsServerConfig({
    prefix: values('--prefix')[0],
    tlsDir: values('--tls-dir')[0],
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
