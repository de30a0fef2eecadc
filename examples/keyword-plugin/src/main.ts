import { readFileSync } from 'node:fs';
import { runPlugin } from '@conveyor/plugin-sdk';
import { onNormalMessage, type KeywordSettings } from './keyword.js';

// An example plugin, run as its own process next to Conveyor:
//   NATS_URL=nats://127.0.0.1:4222 CONVEYOR_SUBJECT_PREFIX=conveyor node examples/keyword-plugin/dist/main.js
// Against a server that requires credentials: NATS_USER=plugin and NATS_PASSWORD_FILE (or NATS_PASSWORD).
const env = process.env;
const natsPassword = env.NATS_PASSWORD_FILE ? readFileSync(env.NATS_PASSWORD_FILE, 'utf8').trim() : env.NATS_PASSWORD;
const settings: KeywordSettings = {
  keyword: env.PLUGIN_KEYWORD ?? 'ping',
  answer: env.PLUGIN_ANSWER ?? 'pong',
  silenceWord: env.PLUGIN_SILENCE_WORD ?? 'shh',
  rewritePrefix: env.PLUGIN_REWRITE_PREFIX ?? '[via keyword-plugin] ',
};

const plugin = await runPlugin({
  name: env.PLUGIN_NAME ?? 'conveyor/keyword-reply',
  prefix: env.CONVEYOR_SUBJECT_PREFIX ?? 'conveyor',
  natsUrl: env.NATS_URL ?? 'nats://127.0.0.1:4222',
  natsUser: env.NATS_USER,
  natsPassword,
  priority: Number(env.PLUGIN_PRIORITY ?? 0),
  timeoutMs: Number(env.PLUGIN_TIMEOUT_MS ?? 2_000),
  handlers: {
    PersonNormalMessageReceived: (ctx) => onNormalMessage(settings, ctx),
    GroupNormalMessageReceived: (ctx) => onNormalMessage(settings, ctx),
  },
});
console.log(JSON.stringify({ msg: 'plugin running', name: plugin.registration.name, events: plugin.registration.events }));

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void plugin.stop().then(() => process.exit(0)));
}
