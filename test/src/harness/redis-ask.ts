import { Redis } from 'ioredis';

/** One command to the redis-server (or Sentinel) on a loopback port, on a connection of its own that gives up at once. */
export async function ask(port: number, ...args: string[]): Promise<unknown> {
  const c = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 2_000 });
  c.on('error', () => undefined);
  try {
    await c.connect();
    return await c.call(args[0]!, ...args.slice(1));
  } finally {
    c.disconnect();
  }
}
