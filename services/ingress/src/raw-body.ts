import type { IncomingMessage } from 'node:http';

export class BodyTooLargeError extends Error {}

/**
 * Reads the exact request bytes (signatures are over them), stopping as soon as the limit is passed
 * so an oversized body costs at most `limit` bytes of memory.
 */
export async function readRawBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw new BodyTooLargeError();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new BodyTooLargeError();
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks, size);
}
