import { randomUUID } from 'node:crypto';
import { startFakeTelegram, type FakeTelegram } from '../fakes/index.js';
import { addTelegramBot, startTestSystem, type TestSystem } from '../harness/system.js';
import { uniqueName } from '../harness/ids.js';

/** The test system the fuzz categories share: one HTTP-bot bot, one Telegram bot, the fakes behind them. */
export interface FuzzSystem {
  sys: TestSystem;
  telegram: FakeTelegram;
  telegramBotId: string;
  telegramSecret: string;
  stop(): Promise<void>;
}

export async function startFuzzSystem(): Promise<FuzzSystem> {
  const sys = await startTestSystem({
    pipelineConfig: {
      // Every group message is answered, so each accepted message has a reply to wait for; the
      // rate limit is out of reach, so inputs sharing a session id are all answered by the model.
      trigger: { 'group-respond-rules': { random: 1.0 } },
      safety: { 'rate-limit': { 'window-length': 60, limitation: 1_000_000 } },
    },
    // The services log a warning for every refused input: keep the logs to what helps after a failure.
    serviceEnv: { LOG_LEVEL: 'warn' },
  });
  const telegramToken = `1:${uniqueName('token')}`;
  const telegramSecret = uniqueName('webhook-secret');
  const telegramBotId = randomUUID();
  let telegram: FakeTelegram | undefined;
  try {
    telegram = await startFakeTelegram({ token: telegramToken });
    await addTelegramBot(sys, 'Telegram fuzz bot', { token: telegramToken, webhook_secret: telegramSecret, api_base_url: telegram.url, bot_username: 'fuzz_bot' }, telegramBotId);
  } catch (err) {
    await telegram?.close();
    await sys.stop();
    throw err;
  }
  const fakeTelegram = telegram;
  return {
    sys,
    telegram: fakeTelegram,
    telegramBotId,
    telegramSecret,
    stop: async () => {
      await sys.stop();
      await fakeTelegram.close();
    },
  };
}

/** Why a service process is no longer running, or undefined while all four run. */
export function deadService(fuzz: FuzzSystem): string | undefined {
  const dead = fuzz.sys.services.services.find((s) => s.child.exitCode !== null || s.child.signalCode !== null);
  return dead ? `${dead.instance} exited (${dead.child.exitCode ?? dead.child.signalCode}):\n${dead.logs.slice(-20).join('\n')}` : undefined;
}
