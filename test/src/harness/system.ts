import { writeFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { topology, type Topology } from '@conveyor/contracts';
import { parseConfigText, syncConfigFile } from '@conveyor/config';
import { createPrismaClient } from '@conveyor/persistence';
import { createTempDatabase, type TempDatabase } from '@conveyor/persistence/testing';
import { sign } from '@conveyor/http-bot';
import { connectBus, ensureStreams, natsServers } from '@conveyor/bus';
import { startCallbackReceiver, startFakeOpenAI, startOtlpReceiver, type CallbackReceiver, type CallbackReceiverOptions, type FakeOpenAI, type OtlpReceiver } from '../fakes/index.js';
import { startSecuredNats, type SecuredNats } from '../deploy/nats-server.js';
import { ALL_SERVICES, ServiceHarness, type ServiceName } from './services.js';
import { uniqueName } from './ids.js';

export const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * Settings for every service of every system this test run starts (JSON object of strings): a test
 * that runs other test files against backends of its own (a Redis Cluster) passes them here.
 */
export function runWideServiceEnv(raw = process.env.CONVEYOR_TEST_SERVICE_ENV): Record<string, string> {
  if (!raw) return {};
  const parsed: unknown = JSON.parse(raw);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('CONVEYOR_TEST_SERVICE_ENV must be a JSON object');
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(parsed)) {
    if (typeof v !== 'string') throw new Error(`CONVEYOR_TEST_SERVICE_ENV.${k} must be a string`);
    out[k] = v;
  }
  return out;
}

/** The local agent on the system's fake model: what every test pipeline starts from. */
const FAKE_MODEL_AGENT = { ai: { 'local-agent': { model: { primary: 'fake', fallbacks: [] } } } };

export interface TestSystem {
  prefix: string;
  topology: Topology;
  db: TempDatabase;
  llm: FakeOpenAI;
  callbacks: CallbackReceiver;
  otlp: OtlpReceiver;
  services: ServiceHarness;
  /** The owned nats-server with the generated permissions, when started with `natsPermissions`. */
  securedNats?: SecuredNats;
  botId: string;
  inboundSecret: string;
  /** POSTs a signed HTTP-bot message to the ingress. */
  post(body: unknown, options?: { subPath?: string; headers?: Record<string, string>; rawBody?: Buffer | string; secret?: string; signal?: AbortSignal }): Promise<Response>;
  stop(): Promise<void>;
}

export interface TestSystemOptions {
  /** Extra pipeline config (LangBot shape) merged by the config loader. */
  pipelineConfig?: Record<string, unknown>;
  /** The fake model's abilities (default `func_call`; add `vision` for a model that sees images). */
  modelAbilities?: string[];
  /** The fake model's extra arguments, sent with every request (temperature, max_tokens, ...). */
  modelExtraArgs?: Record<string, unknown>;
  /** The fake model's prices per 1M input and output tokens (default: none, so calls cost nothing). */
  modelPrices?: { inputPricePerMTok: number; outputPricePerMTok: number };
  /** Start the four services (default) or leave that to the test. */
  startServices?: boolean;
  serviceEnv?: NodeJS.ProcessEnv;
  /** Extra Node.js flags for the service processes. */
  serviceNodeArgs?: string[];
  /** A NATS or Redis of the test's own (fault tests restart them); default the shared instances. */
  natsUrl?: string;
  redisUrl?: string;
  /**
   * Run the services against a nats-server of the test's own with the generated per-service
   * permissions (test/src/deploy/nats-config.ts), each role connecting as its own user as in a
   * deployment. Default: the shared NATS without authentication. Not together with `natsUrl`.
   */
  natsPermissions?: boolean;
  /** How the fake integrator answers each callback (default 200 at once); it may hold a callback open. */
  callbackRespond?: CallbackReceiverOptions['respond'];
}

/**
 * A whole isolated Conveyor: its own subject prefix and streams, its own database, the fakes for
 * the third-party services, and the four services as child processes.
 */
export async function startTestSystem(options: TestSystemOptions = {}): Promise<TestSystem> {
  const prefix = uniqueName('t');
  const topo = topology(prefix);
  const inboundSecret = 'e2e-inbound-secret';
  const botId = randomUUID();
  const [db, llm, callbacks, otlp] = await Promise.all([
    createTempDatabase(),
    startFakeOpenAI({ apiKey: 'e2e-llm-key' }),
    startCallbackReceiver({ secret: inboundSecret, ...(options.callbackRespond ? { respond: options.callbackRespond } : {}) }),
    startOtlpReceiver(),
  ]);
  const dir = await mkdtemp(path.join(tmpdir(), 'conveyor-e2e-'));
  const configFile = path.join(dir, 'conveyor.yaml');
  const config = {
    models: [{ id: 'fake', baseUrl: llm.url, apiKeyEnv: 'CONVEYOR_KEY_E2E_LLM', model: 'fake-model', abilities: options.modelAbilities ?? ['func_call'], ...(options.modelExtraArgs ? { extraArgs: options.modelExtraArgs } : {}), ...options.modelPrices }],
    // Every enabled MCP server, as the tests that add one expect; a new pipeline binds none unless it says so.
    pipelines: [{ id: 'default', config: deepMerge(FAKE_MODEL_AGENT, options.pipelineConfig ?? {}), extensionsPreferences: { enable_all_mcp_servers: true } }],
    bots: [{ id: botId, adapter: 'http-bot', pipeline: 'default', config: httpBotSettings(callbacks, inboundSecret) }],
  };
  // JSON is YAML: the loader reads it like any conveyor.yaml.
  await writeFile(configFile, JSON.stringify(config, null, 2));
  const prisma = createPrismaClient(db.url);
  try {
    await syncConfigFile(prisma, configFile);
  } finally {
    await prisma.$disconnect();
  }
  if (options.natsPermissions && options.natsUrl) throw new Error('natsPermissions starts its own NATS server; do not pass natsUrl too');
  const securedNats = options.natsPermissions ? await startSecuredNats(prefix) : undefined;
  const roleEnv: Partial<Record<ServiceName, NodeJS.ProcessEnv>> = {};
  if (securedNats) for (const role of ALL_SERVICES) roleEnv[role] = await securedNats.credentialsEnv(role);
  // Under the generated permissions only the admin user creates streams: provision them as the admin
  // service of a deployment does, before the other roles look for them.
  if (securedNats) await provisionStreamsAs(securedNats, topo);
  const natsUrl = securedNats?.url ?? options.natsUrl ?? NATS_URL;
  const services = new ServiceHarness({
    NATS_URL: natsUrl,
    REDIS_URL: options.redisUrl ?? REDIS_URL,
    DATABASE_URL: db.url,
    CONVEYOR_SUBJECT_PREFIX: prefix,
    CONVEYOR_KEY_E2E_LLM: 'e2e-llm-key',
    LOG_LEVEL: 'info',
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
    OTEL_BSP_SCHEDULE_DELAY: '100',
    SHUTDOWN_GRACE_SECONDS: '10',
    ...runWideServiceEnv(),
    ...options.serviceEnv,
  }, options.serviceNodeArgs, roleEnv);

  const post = signedPost(services, botId, inboundSecret);

  const stop = async () => {
    await services.stopAll();
    await Promise.all([llm.close(), callbacks.close(), otlp.close()]);
    // An owned server takes its streams with it.
    if (securedNats) await securedNats.stop();
    else await deleteStreams(topo, natsUrl).catch(() => undefined);
    await db.drop();
    await rm(dir, { recursive: true, force: true });
  };

  if (options.startServices !== false) {
    // The caller gets no handle to stop on failure: what was started here (processes, an owned
    // nats-server, the database) is stopped here.
    await services.startAll().catch(async (err: unknown) => {
      await stop().catch(() => undefined);
      throw err;
    });
  }

  return { prefix, topology: topo, db, llm, callbacks, otlp, services, securedNats, botId, inboundSecret, post, stop };
}

/** A test HTTP bot's settings: replies to the system's callback receiver, one retry. */
function httpBotSettings(callbacks: CallbackReceiver, inboundSecret: string) {
  return { inbound_secret: inboundSecret, callback_url: `${callbacks.url}/callback`, callback_max_retries: 1 };
}

/** POSTs signed HTTP-bot messages for `botId` to the system's ingress. */
function signedPost(services: ServiceHarness, botId: string, inboundSecret: string): TestSystem['post'] {
  return async (body, o = {}) => {
    const raw = o.rawBody ?? Buffer.from(JSON.stringify(body));
    const ts = String(Math.floor(Date.now() / 1000));
    const ingress = services.get('ingress');
    return fetch(`${ingress.url}/bots/${botId}${o.subPath ? `/${o.subPath}` : ''}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-lb-timestamp': ts, 'x-lb-signature': sign(o.secret ?? inboundSecret, ts, raw), ...o.headers },
      body: raw,
      signal: o.signal,
    });
  };
}

/**
 * An HTTP bot on a pipeline of its own (`pipelineConfig` over the system's model), added to a running
 * system: a test's own bot, sessions and pipeline settings without starting another system. The view
 * shares everything else (services, fakes, database); its `stop` leaves the system running.
 */
export async function addHttpBotPipeline(sys: TestSystem, pipelineConfig: Record<string, unknown>): Promise<TestSystem> {
  const botId = randomUUID();
  const pipelineId = uniqueName('pipeline');
  const settings = httpBotSettings(sys.callbacks, sys.inboundSecret);
  const text = JSON.stringify({
    pipelines: [{ id: pipelineId, config: deepMerge(FAKE_MODEL_AGENT, pipelineConfig), extensionsPreferences: { enable_all_mcp_servers: false } }],
    bots: [{ id: botId, adapter: 'http-bot', pipeline: pipelineId, config: settings }],
  });
  // Validated and completed as a conveyor.yaml would be, then stored as rows the console made (a
  // file-managed row of another file would be retired by the next apply).
  const config = parseConfigText(text, `${pipelineId}.yaml`, { knownModelIds: ['fake'] });
  const prisma = createPrismaClient(sys.db.url);
  try {
    for (const pipeline of config.pipelines) await prisma.pipeline.create({ data: pipeline });
    for (const bot of config.bots) await prisma.bot.create({ data: { ...bot, adapterConfig: settings } });
  } finally {
    await prisma.$disconnect();
  }
  return { ...sys, botId, post: signedPost(sys.services, botId, sys.inboundSecret), stop: async () => undefined };
}

export async function deleteStreams(topo: Topology, natsUrl = NATS_URL): Promise<void> {
  const nc = await connect({ servers: natsServers(natsUrl) });
  try {
    const jsm = await jetstreamManager(nc);
    for (const s of Object.values(topo.streams)) await jsm.streams.delete(s.name).catch(() => undefined);
  } finally {
    await nc.close();
  }
}

function deepMerge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const prev = out[k];
    out[k] = isObject(prev) && isObject(v) ? deepMerge(prev, v) : v;
  }
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Adds an enabled bot of `adapter` on the system's pipeline (`adapterConfig` as `conveyor.yaml` has it); returns its id. */
export async function addBot(sys: Pick<TestSystem, 'db'>, name: string, adapter: string, adapterConfig: Record<string, string | boolean>, id: string = randomUUID()): Promise<string> {
  const prisma = createPrismaClient(sys.db.url);
  try {
    const pipeline = await prisma.pipeline.findFirstOrThrow();
    await prisma.bot.create({ data: { id, name, adapter, pipelineId: pipeline.id, enabled: true, adapterConfig } });
    return id;
  } finally {
    await prisma.$disconnect();
  }
}

/** Adds an enabled Telegram bot on the system's pipeline (`adapterConfig` as `conveyor.yaml` has it); returns its id. */
export function addTelegramBot(sys: Pick<TestSystem, 'db'>, name: string, adapterConfig: Record<string, string | boolean>, id: string = randomUUID()): Promise<string> {
  return addBot(sys, name, 'telegram', adapterConfig, id);
}

/** Adds an enabled OneBot bot on the system's pipeline (forward: connecting to `host:port`; reverse: listening there); returns its id. */
export function addOneBotBot(sys: Pick<TestSystem, 'db'>, name: string, config: { host: string; port: number; 'access-token': string; mode?: 'forward' | 'reverse' }, id: string = randomUUID()): Promise<string> {
  return addBot(sys, name, 'onebot', { ...config, port: String(config.port) }, id);
}

/** Creates the streams as the admin user, the one the generated permissions let create them. */
export async function provisionStreamsAs(nats: SecuredNats, topo: Topology): Promise<void> {
  const nc = await connectBus({ url: nats.url, name: 'harness-admin', env: await nats.credentialsEnv('admin'), extra: { inboxPrefix: topo.subjects.inboxPrefix('admin') } });
  try {
    await ensureStreams(await jetstreamManager(nc), Object.values(topo.streams));
  } finally {
    await nc.close();
  }
}
