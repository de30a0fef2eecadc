import { isIP } from 'node:net';
import { Agent, request } from 'undici';
import { BLOCKED_ADDRESS_CODE, isPrivateAddress, publicOnlyLookup } from './address-policy.js';
import { scopedSignal } from '../scoped-signal.js';

/** Why an image could not be read; the metric label and the log field. */
export type ImageFailureReason =
  | 'bad_url'
  | 'blocked_address'
  | 'http_status'
  | 'too_large'
  | 'wrong_type'
  | 'timeout'
  | 'too_many_redirects'
  | 'network'
  | 'too_many_images';

export class ImageFetchError extends Error {
  constructor(readonly reason: ImageFailureReason, message: string) {
    super(message);
    this.name = 'ImageFetchError';
  }
}

/** The image types chat models take (OpenAI's vision input list). */
export const IMAGE_CONTENT_TYPES: readonly string[] = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];

export interface ImageFetchLimits {
  /** The whole fetch, redirects and body included. */
  timeoutMs: number;
  /** Bytes of the image; the body is not read past this. */
  maxBytes: number;
  /** Redirects followed; each hop's address is checked again. */
  maxRedirects: number;
  /** Reach loopback and private networks (a platform's own file server on the same network, tests). */
  allowPrivateNetwork: boolean;
}

export interface FetchedImage {
  /** `data:<type>;base64,<bytes>`, the form LangBot sends images to the model in. */
  dataUrl: string;
  contentType: string;
  bytes: number;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/** The image type the bytes are, by their signature; null when they are none of the four. */
export function sniffImageType(head: Uint8Array): string | null {
  const at = (i: number, ...bytes: number[]) => bytes.every((b, k) => head[i + k] === b);
  if (at(0, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return 'image/png';
  if (at(0, 0xff, 0xd8, 0xff)) return 'image/jpeg';
  if (at(0, 0x47, 0x49, 0x46, 0x38)) return 'image/gif';
  if (at(0, 0x52, 0x49, 0x46, 0x46) && at(8, 0x57, 0x45, 0x42, 0x50)) return 'image/webp';
  return null;
}

/** The URL without its query and fragment: what logs may show (query strings often hold access tokens). */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(not a URL)';
  }
}

/** Drops a body unread, closing its connection; the abort error a destroyed body emits is expected. */
function discard(body: NodeJS.ReadableStream & { destroy(): void }): void {
  body.on('error', () => undefined);
  body.destroy();
}

function hasCode(err: unknown, code: string): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    if ((e as { code?: unknown }).code === code) return true;
  }
  return false;
}

/**
 * Reads images from URLs with bounds on time, size, type, redirects and the addresses it connects
 * to, and returns them as data URLs. One instance per process: it keeps a small keep-alive pool.
 */
export class ImageFetcher {
  private readonly agent: Agent;

  constructor(readonly limits: ImageFetchLimits) {
    this.agent = new Agent({
      connections: 16,
      keepAliveTimeout: 4_000,
      connect: { timeout: limits.timeoutMs, ...(limits.allowPrivateNetwork ? {} : { lookup: publicOnlyLookup }) },
    });
  }

  /** The image at `url`; throws `ImageFetchError` with the reason, or the run's abort. */
  async fetch(url: string, signal?: AbortSignal): Promise<FetchedImage> {
    const timeout = AbortSignal.timeout(this.limits.timeoutMs);
    // The run's signal lives as long as the run; undici would leave a listener on it per fetch.
    const scope = scopedSignal(signal);
    const combined = scope.signal ? AbortSignal.any([scope.signal, timeout]) : timeout;
    try {
      return await this.follow(url, combined);
    } catch (err) {
      if (signal?.aborted) throw err;
      if (err instanceof ImageFetchError) throw err;
      if (timeout.aborted) throw new ImageFetchError('timeout', `no image within ${this.limits.timeoutMs} ms`);
      if (hasCode(err, BLOCKED_ADDRESS_CODE)) throw new ImageFetchError('blocked_address', (err as Error).message);
      throw new ImageFetchError('network', (err as Error).message);
    } finally {
      scope.release();
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }

  private async follow(start: string, signal: AbortSignal): Promise<FetchedImage> {
    let url = this.checkedUrl(start);
    for (let hop = 0; ; hop++) {
      const res = await request(url, {
        method: 'GET',
        dispatcher: this.agent,
        signal,
        maxRedirections: 0,
        headers: { accept: IMAGE_CONTENT_TYPES.join(', '), 'user-agent': 'Conveyor' },
      });
      if (REDIRECT_STATUSES.has(res.statusCode)) {
        discard(res.body);
        const location = res.headers.location;
        if (typeof location !== 'string') throw new ImageFetchError('http_status', `redirect ${res.statusCode} without a location`);
        if (hop >= this.limits.maxRedirects) throw new ImageFetchError('too_many_redirects', `more than ${this.limits.maxRedirects} redirects`);
        url = this.checkedUrl(new URL(location, url).href);
        continue;
      }
      if (res.statusCode !== 200) {
        discard(res.body);
        throw new ImageFetchError('http_status', `HTTP ${res.statusCode}`);
      }
      const header = res.headers['content-type'];
      const declared = (Array.isArray(header) ? header[0] : header ?? '').split(';')[0].trim().toLowerCase();
      if (!IMAGE_CONTENT_TYPES.includes(declared)) {
        discard(res.body);
        throw new ImageFetchError('wrong_type', `content type ${declared || '(none)'} is not ${IMAGE_CONTENT_TYPES.join(', ')}`);
      }
      const length = Number(res.headers['content-length']);
      if (Number.isFinite(length) && length > this.limits.maxBytes) {
        discard(res.body);
        throw new ImageFetchError('too_large', `${length} bytes, over ${this.limits.maxBytes}`);
      }
      const chunks: Buffer[] = [];
      let bytes = 0;
      for await (const chunk of res.body) {
        const buf = chunk as Buffer;
        bytes += buf.length;
        if (bytes > this.limits.maxBytes) {
          discard(res.body);
          throw new ImageFetchError('too_large', `over ${this.limits.maxBytes} bytes`);
        }
        chunks.push(buf);
      }
      const body = Buffer.concat(chunks, bytes);
      // The declared type is checked first so nothing else is read; the bytes decide, since a server
      // may label any body as an image and the provider rejects what is not one.
      const actual = sniffImageType(body.subarray(0, 16));
      if (actual === null) throw new ImageFetchError('wrong_type', `the body is not a ${IMAGE_CONTENT_TYPES.join(', ')} image`);
      return { dataUrl: `data:${actual};base64,${body.toString('base64')}`, contentType: actual, bytes };
    }
  }

  /** An http(s) URL whose host, when an IP literal, is allowed (names are checked when they resolve). */
  private checkedUrl(raw: string): string {
    let u: URL;
    try {
      u = new URL(raw);
    } catch {
      throw new ImageFetchError('bad_url', 'not a URL');
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new ImageFetchError('bad_url', `scheme ${u.protocol} is not http or https`);
    const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
    if (!this.limits.allowPrivateNetwork && isIP(host) !== 0 && isPrivateAddress(host)) {
      throw new ImageFetchError('blocked_address', `${host} is a private network address`);
    }
    return u.href;
  }
}
