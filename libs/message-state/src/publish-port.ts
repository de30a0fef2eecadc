import type { z } from 'zod';

/** How a bus message is published and de-duplicated (the bus's `BusPublisher` is one). */
export interface PublishPort {
  publish<S extends z.ZodType>(
    subject: string,
    schema: S,
    payload: z.input<S>,
    opts: { msgId: string; queryId: string; retryForMs: number; retryWhen?: 'any' | 'unavailable'; validate?: boolean },
  ): Promise<{ seq: number; duplicate: boolean }>;
}
