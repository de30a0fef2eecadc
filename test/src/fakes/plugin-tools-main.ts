import { runPlugin } from '@conveyor/plugin-sdk';

/**
 * A plugin process offering tools through the SDK, for fault tests that kill it: `hold` never answers
 * (a call in flight when the process dies), `pid` answers with this process's id; its registration
 * lasts three heartbeats (PLUGIN_HEARTBEAT_MS). It prints `ready`
 * once registered, and one JSON line per call it receives.
 */
const env = process.env;
const plugin = await runPlugin({
  name: env.PLUGIN_NAME ?? 'test/tools',
  prefix: env.CONVEYOR_SUBJECT_PREFIX ?? 'conveyor',
  natsUrl: env.NATS_URL ?? 'nats://127.0.0.1:4222',
  timeoutMs: Number(env.PLUGIN_TIMEOUT_MS ?? 3_000),
  heartbeatMs: Number(env.PLUGIN_HEARTBEAT_MS ?? 500),
  tools: [
    {
      name: 'hold',
      description: 'Waits for ever',
      parameters: { type: 'object', properties: {} },
      handler: (_args, ctx) => {
        console.log(JSON.stringify({ call: 'hold', queryId: ctx.queryId }));
        return new Promise<string>(() => undefined);
      },
    },
    { name: 'pid', description: 'This process id', parameters: { type: 'object', properties: {} }, handler: () => String(process.pid) },
  ],
});
console.log('ready');
process.on('SIGTERM', () => void plugin.stop().then(() => process.exit(0)));
