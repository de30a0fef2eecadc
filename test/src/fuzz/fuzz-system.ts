import { randomBytes, randomUUID } from 'node:crypto';
import { createPrismaClient } from '@conveyor/persistence';
import { startFakeTelegram, type FakeTelegram } from '../fakes/index.js';
import { startScriptedMcp, type ScriptedMcp } from '../fakes/mcp-server.js';
import { addTelegramBot, startTestSystem, type TestSystem } from '../harness/system.js';
import { uniqueName } from '../harness/ids.js';

/** The one tool the scripted MCP server offers; the `mcp-tool` category scripts what it returns. */
export const FUZZ_TOOL = 'fuzz_result';

/**
 * How long the runner waits for an MCP tool call. A reply the client cannot match to its request
 * (a wrong id, a stream that ends without it) is only noticed at this timeout; LangBot's 300 s would
 * make each such input cost five minutes.
 */
export const FUZZ_MCP_CALL_TIMEOUT_MS = 10_000;

/**
 * The test system the fuzz categories share: one HTTP-bot bot, one Telegram bot, the web chat switched
 * on, a scripted MCP server every run may use, and the fakes behind them.
 */
export interface FuzzSystem {
  sys: TestSystem;
  telegram: FakeTelegram;
  telegramBotId: string;
  telegramSecret: string;
  /** The web chat API's bearer token (WEBCHAT_TOKEN). */
  webChatToken: string;
  mcp: ScriptedMcp;
  stop(): Promise<void>;
}

export async function startFuzzSystem(): Promise<FuzzSystem> {
  const webChatToken = randomBytes(24).toString('base64url');
  const sys = await startTestSystem({
    pipelineConfig: {
      // Every group message is answered, so each accepted message has a reply to wait for; the
      // rate limit is out of reach, so inputs sharing a session id are all answered by the model.
      trigger: { 'group-respond-rules': { random: 1.0 } },
      safety: { 'rate-limit': { 'window-length': 60, limitation: 1_000_000 } },
    },
    // The services log a warning for every refused input: keep the logs to what helps after a failure.
    serviceEnv: { LOG_LEVEL: 'warn', WEBCHAT_ENABLED: 'true', WEBCHAT_TOKEN: webChatToken, MCP_TOOL_CALL_TIMEOUT_MS: String(FUZZ_MCP_CALL_TIMEOUT_MS) },
  });
  const telegramToken = `1:${uniqueName('token')}`;
  const telegramSecret = uniqueName('webhook-secret');
  const telegramBotId = randomUUID();
  let telegram: FakeTelegram | undefined;
  let mcp: ScriptedMcp | undefined;
  try {
    telegram = await startFakeTelegram({ token: telegramToken });
    await addTelegramBot(sys, 'Telegram fuzz bot', { token: telegramToken, webhook_secret: telegramSecret, api_base_url: telegram.url, bot_username: 'fuzz_bot' }, telegramBotId);
    // The runner reads the enabled MCP servers when a run needs tools: registered now, it is there for every run.
    mcp = await startScriptedMcp({ tools: [{ name: FUZZ_TOOL, description: 'Returns what the fuzz case scripted', inputSchema: { type: 'object', properties: { case: { type: 'string' } } } }] });
    const prisma = createPrismaClient(sys.db.url);
    try {
      await prisma.mcpServer.create({ data: { id: uniqueName('mcp'), name: 'fuzz', transport: 'http', config: { url: mcp.url } } });
    } finally {
      await prisma.$disconnect();
    }
  } catch (err) {
    await mcp?.close();
    await telegram?.close();
    await sys.stop();
    throw err;
  }
  const fakeTelegram = telegram;
  const fakeMcp = mcp;
  return {
    sys,
    telegram: fakeTelegram,
    telegramBotId,
    telegramSecret,
    webChatToken,
    mcp: fakeMcp,
    stop: async () => {
      await sys.stop();
      await Promise.all([fakeTelegram.close(), fakeMcp.close()]);
    },
  };
}

/** Why a service process is no longer running, or undefined while all four run. */
export function deadService(fuzz: FuzzSystem): string | undefined {
  const dead = fuzz.sys.services.services.find((s) => s.child.exitCode !== null || s.child.signalCode !== null);
  return dead ? `${dead.instance} exited (${dead.child.exitCode ?? dead.child.signalCode}):\n${dead.logs.slice(-20).join('\n')}` : undefined;
}
