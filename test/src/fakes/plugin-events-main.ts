import { runPlugin } from '@conveyor/plugin-sdk';

/**
 * A plugin on the SDK for the events around the chat: it drops messages with `drop-me` before any
 * stage, sets the preset of every turn, and replaces answers that contain `secret`.
 */
const env = process.env;
const plugin = await runPlugin({
  name: env.PLUGIN_NAME ?? 'test/events',
  prefix: env.CONVEYOR_SUBJECT_PREFIX ?? 'conveyor',
  natsUrl: env.NATS_URL ?? 'nats://127.0.0.1:4222',
  timeoutMs: 5_000,
  handlers: {
    PersonMessageReceived(ctx) {
      if (JSON.stringify(ctx.event.message_chain).includes('drop-me')) ctx.preventDefault();
    },
    PromptPreProcessing(ctx) {
      ctx.event.default_prompt = [{ role: 'system', content: 'preset from the plugin' }];
    },
    NormalMessageResponded(ctx) {
      if (ctx.event.response_text.includes('secret')) ctx.reply([{ type: 'Plain', text: '[redacted by plugin]' }]);
    },
  },
});
console.log(JSON.stringify({ msg: 'plugin running', name: plugin.registration.name }));
