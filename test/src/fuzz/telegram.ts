import fc from 'fast-check';
import { LIMITS } from '@conveyor/contracts';
import type { FuzzSystem } from './fuzz-system.js';
import { deadService } from './fuzz-system.js';
import { anyTypedValue, hostileText, smallJson } from './arbitraries.js';
import { emptyReport, forEachLimit, preview, requestFailure, type CategoryReport } from './report.js';

/** A Telegram id, or something in its place: 1e308, negatives, floats, strings, integers past 2^53 (as raw JSON text). */
const oddId: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: -(2 ** 40), max: 2 ** 40 }) },
  { weight: 1, arbitrary: fc.constantFrom(1e308, -1e308, 0, -0, 1.5, 2 ** 53, -(2 ** 53) - 2, 5e-324) },
  { weight: 1, arbitrary: fc.bigInt({ min: 10n ** 17n, max: 10n ** 30n }).map((n) => `@@RAW:${n}@@`) },
  { weight: 1, arbitrary: anyTypedValue },
);

const name: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: hostileText(30) },
  { weight: 1, arbitrary: fc.integer({ min: LIMITS.nameChars - 2, max: LIMITS.nameChars * 3 }).map((n) => 'n'.repeat(n)) },
  { weight: 1, arbitrary: anyTypedValue },
);

const chat = fc.record(
  { id: oddId, type: fc.oneof(fc.constantFrom('private', 'group', 'supergroup', 'channel'), anyTypedValue), title: name, username: name },
  { requiredKeys: [] },
);

const user = fc.record({ id: oddId, is_bot: fc.boolean(), first_name: name, last_name: name, username: name }, { requiredKeys: [] });

const text: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 5, arbitrary: hostileText(80) },
  { weight: 1, arbitrary: hostileText(20).map((t) => `@fuzz_bot ${t}`) },
  { weight: 1, arbitrary: fc.integer({ min: 10_000, max: LIMITS.inboundBodyBytes }).map((n) => 't'.repeat(n)) },
  { weight: 1, arbitrary: anyTypedValue },
);

const message = fc.record(
  { message_id: oddId, from: user, chat, date: fc.oneof(fc.nat(), anyTypedValue), text, caption: text, extra: fc.dictionary(hostileText(8), smallJson, { maxKeys: 2 }) },
  { requiredKeys: ['chat'] },
).map(({ extra, ...fields }) => ({ ...(extra ?? {}), ...fields }));

export type TelegramInput = { kind: 'update'; updateId: 'unique' | unknown; field: string; message: unknown } | { kind: 'raw'; body: string | Buffer };

export const telegramInput: fc.Arbitrary<TelegramInput> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('update' as const),
      updateId: fc.oneof({ weight: 6, arbitrary: fc.constant<'unique'>('unique') }, { weight: 1, arbitrary: oddId }),
      field: fc.constantFrom('message', 'message', 'message', 'edited_message', 'channel_post', 'callback_query'),
      message: fc.oneof({ weight: 6, arbitrary: message }, { weight: 1, arbitrary: anyTypedValue }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('raw' as const),
      body: fc.oneof(
        fc.constantFrom('', '{', 'null', '[]', '"update"', '{"update_id":', '{"update_id":1e999}'),
        fc.uint8Array({ maxLength: 100 }).map((b) => Buffer.from(b)),
        fc.integer({ min: LIMITS.inboundBodyBytes + 1, max: LIMITS.inboundBodyBytes + 100_000 }).map((n) => `{"update_id":1,"message":{"text":"${'u'.repeat(n)}"}}`),
      ),
    }),
  },
);

function serialise(input: TelegramInput, uniqueUpdateId: number): string | Buffer {
  if (input.kind === 'raw') return input.body;
  const updateId = input.updateId === 'unique' ? uniqueUpdateId : input.updateId;
  return JSON.stringify({ update_id: updateId, [input.field]: input.message }).replace(/"@@RAW:(\d+)@@"/g, '$1');
}

/**
 * Posts every input to the Telegram webhook with the configured secret. Telegram retries every
 * non-2xx answer, so the webhook must answer each one 200 `{"ok":true}`, however odd.
 */
export async function fuzzTelegram(fuzz: FuzzSystem, inputs: TelegramInput[], options: { concurrency?: number; firstUpdateId?: number } = {}): Promise<CategoryReport> {
  const report = emptyReport('telegram');
  const url = `${fuzz.sys.services.get('ingress').url}/telegram/${fuzz.telegramBotId}`;
  // Update ids de-duplicate in JetStream's window: each run starts from its own range.
  const firstUpdateId = options.firstUpdateId ?? Math.floor(Date.now() / 1000) * 1000;
  await forEachLimit(inputs, options.concurrency ?? 4, async (input, i) => {
    report.inputs++;
    const body = serialise(input, firstUpdateId + i);
    let res: Response;
    try {
      res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': fuzz.telegramSecret }, body });
    } catch (err) {
      report.failures.push({ problem: requestFailure(err), input: preview(body) });
      return;
    }
    const text = await res.text().catch(() => '');
    if (res.status >= 400 && res.status < 500) report.status4xx++;
    if (res.status >= 200 && res.status < 300) report.status2xx++;
    if (res.status !== 200) {
      report.failures.push({ problem: `${res.status} answer: ${text.slice(0, 200)}`, input: preview(body) });
      return;
    }
    if (text !== '{"ok":true}') report.failures.push({ problem: `200 with ${text.slice(0, 200)}`, input: preview(body) });
  });
  const dead = deadService(fuzz);
  if (dead) report.failures.push({ problem: 'a service died', input: dead });
  return report;
}
