import fc from 'fast-check';
import type { DeadLetter } from '@conveyor/contracts';
import { startFuzzSystem } from './fuzz-system.js';
import { fuzzHttpBot, httpBotInput } from './http-bot.js';
import { fuzzTelegram, telegramInput } from './telegram.js';
import { busInput, fuzzBus } from './bus.js';
import { configInput, fuzzConfig } from './config.js';
import { fuzzModelStreams, modelResponse } from './model-stream.js';
import { fuzzWebChat, webChatInput } from './web-chat.js';
import { fuzzMcpTools, mcpToolCase } from './mcp-tool.js';
import { adminApiInput, fuzzAdminApi } from './admin-api.js';
import type { CategoryReport } from './report.js';

export const CATEGORIES = ['config', 'http-bot', 'telegram', 'bus', 'model-stream', 'web-chat', 'mcp-tool', 'admin-api'] as const;
export type Category = (typeof CATEGORIES)[number];

/** Each category's share of the run count: the pure config checks are cheap, a model run costs a whole pipeline pass. */
const SHARE: Record<Category, number> = { config: 0.4, 'http-bot': 0.22, telegram: 0.07, 'web-chat': 0.09, bus: 0.06, 'model-stream': 0.03, 'mcp-tool': 0.03, 'admin-api': 0.1 };

export interface FuzzRunOptions {
  /** Inputs across all categories. */
  runs: number;
  seed: number;
  categories?: readonly Category[];
  /** Progress lines, e.g. console.log. */
  log?: (line: string) => void;
}

export interface FuzzRunResult {
  reports: CategoryReport[];
  /** Dead letters that no bus fuzz payload explains: messages the system itself gave up on. */
  otherDeadLetters: DeadLetter[];
}

/** Samples `count` inputs of one category; each category draws from its own seed, so one can run alone. */
function sample<T>(arbitrary: fc.Arbitrary<T>, count: number, seed: number, category: Category): T[] {
  return count > 0 ? fc.sample(arbitrary, { numRuns: count, seed: seed + CATEGORIES.indexOf(category) }) : [];
}

export async function runFuzz(options: FuzzRunOptions): Promise<FuzzRunResult> {
  const log = options.log ?? (() => undefined);
  const chosen = options.categories?.length ? options.categories : CATEGORIES;
  const weight = chosen.reduce((sum, c) => sum + SHARE[c], 0);
  const count = (c: Category) => (chosen.includes(c) ? Math.max(1, Math.round((options.runs * SHARE[c]) / weight)) : 0);
  const reports: CategoryReport[] = [];
  let otherDeadLetters: DeadLetter[] = [];

  if (chosen.includes('config')) {
    log(`config: ${count('config')} inputs`);
    reports.push(fuzzConfig(sample(configInput, count('config'), options.seed, 'config')));
  }
  const live = chosen.filter((c) => c !== 'config');
  if (live.length === 0) return { reports, otherDeadLetters };

  log('starting the services');
  const fuzz = await startFuzzSystem();
  try {
    if (chosen.includes('http-bot')) {
      log(`http-bot: ${count('http-bot')} inputs`);
      reports.push(await fuzzHttpBot(fuzz, sample(httpBotInput, count('http-bot'), options.seed, 'http-bot')));
    }
    if (chosen.includes('telegram')) {
      log(`telegram: ${count('telegram')} inputs`);
      reports.push(await fuzzTelegram(fuzz, sample(telegramInput, count('telegram'), options.seed, 'telegram')));
    }
    if (chosen.includes('web-chat')) {
      log(`web-chat: ${count('web-chat')} inputs`);
      reports.push(await fuzzWebChat(fuzz, sample(webChatInput, count('web-chat'), options.seed, 'web-chat')));
    }
    if (chosen.includes('model-stream')) {
      log(`model-stream: ${count('model-stream')} inputs`);
      reports.push(await fuzzModelStreams(fuzz, sample(modelResponse, count('model-stream'), options.seed, 'model-stream')));
    }
    if (chosen.includes('mcp-tool')) {
      log(`mcp-tool: ${count('mcp-tool')} inputs`);
      reports.push(await fuzzMcpTools(fuzz, sample(mcpToolCase, count('mcp-tool'), options.seed, 'mcp-tool')));
    }
    if (chosen.includes('admin-api')) {
      log(`admin-api: ${count('admin-api')} inputs`);
      reports.push(await fuzzAdminApi(fuzz, sample(adminApiInput, count('admin-api'), options.seed, 'admin-api')));
    }
    // Last: it waits for every consumer to drain, which also covers the work the categories before it left.
    if (chosen.includes('bus')) {
      log(`bus: ${count('bus')} inputs`);
      const { otherDeadLetters: others, ...report } = await fuzzBus(fuzz, sample(busInput, count('bus'), options.seed, 'bus'));
      reports.push(report);
      otherDeadLetters = others;
    }
  } finally {
    await fuzz.stop();
  }
  return { reports, otherDeadLetters };
}

/** Dead letters grouped by source, reason and the start of the error. */
export function formatDeadLetters(deadLetters: DeadLetter[]): string {
  const groups = new Map<string, number>();
  for (const dl of deadLetters) {
    const key = `${dl.source} ${dl.reason}: ${dl.error.slice(0, 160)}`;
    groups.set(key, (groups.get(key) ?? 0) + 1);
  }
  return [...groups].map(([key, n]) => `  ${n}× ${key}`).join('\n');
}
