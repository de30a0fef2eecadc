import { z } from 'zod';
import { redisKeys } from '@conveyor/contracts';
import type { RedisClient } from '@conveyor/redis-scripts';

/** WeCom refreshes a stream for up to 6 minutes after the message; its state is kept a while longer. */
const STREAM_TTL_MS = 10 * 60_000;
/** WeCom shows at most 20,480 bytes of a stream's content; the rest of a longer reply is cut. */
export const STREAM_CONTENT_BYTES = 20_480;

const StreamState = z.object({ content: z.string(), finish: z.boolean() });
export type StreamState = z.output<typeof StreamState>;

/** What a stream's refresh shows: its content so far and whether it is finished (nothing stored yet: empty, not finished). */
export async function readStream(redis: RedisClient, prefix: string, botId: string, streamId: string): Promise<StreamState> {
  const raw = await redis.get(redisKeys(prefix).wecomBotStream(botId, streamId));
  const parsed = raw ? StreamState.safeParse(JSON.parse(raw)) : undefined;
  return parsed?.success ? parsed.data : { content: '', finish: false };
}

/** A stream's content cut to what WeCom shows (whole characters). */
export function streamContent(content: string): string {
  if (Buffer.byteLength(content, 'utf8') <= STREAM_CONTENT_BYTES) return content;
  return Buffer.from(content, 'utf8').subarray(0, STREAM_CONTENT_BYTES).toString('utf8').replace(/\uFFFD$/, '');
}

/** Stores the reply's content so far (the dispatcher, per part), cut to what WeCom shows. */
export async function writeStream(redis: RedisClient, prefix: string, botId: string, streamId: string, state: StreamState): Promise<void> {
  const content = streamContent(state.content);
  await redis.set(redisKeys(prefix).wecomBotStream(botId, streamId), JSON.stringify({ content, finish: state.finish }), 'PX', STREAM_TTL_MS);
}
