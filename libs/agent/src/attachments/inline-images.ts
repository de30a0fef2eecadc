import type { ContentPart, LlmMessage } from '@conveyor/contracts';
import { inSpan, meter } from '@conveyor/telemetry';
import { IMAGE_CONTENT_TYPES, ImageFetchError, redactedUrl, type FetchedImage, type ImageFailureReason } from './image-fetch.js';

export const attachmentMetrics = {
  fetched: meter.createCounter('conveyor_attachment_images_fetched', { description: 'Image URLs read and inlined into a model request' }),
  unreadable: meter.createCounter('conveyor_attachment_unreadable', { description: 'Images left out of a model request because they could not be read, by reason' }),
};

export interface ImageSource {
  fetch(url: string, signal?: AbortSignal): Promise<FetchedImage>;
}

export interface InlineImagesOptions {
  source: ImageSource;
  /** Image URLs read per run, newest first; older ones beyond it are left out. */
  maxImages: number;
  logger: { warn(obj: object, msg: string): void };
  queryId?: string;
  signal?: AbortSignal;
}

const DATA_URL = /^data:([a-z0-9.+-]+\/[a-z0-9.+-]+)(;[^,]*)?,/i;

/**
 * The request's messages with every `image_url` part in the form the model takes: an http(s) URL is
 * read here and replaced by a data URL (LangBot hands images to models as base64; a platform's file
 * URL is often unreachable from the model provider or short-lived); a data URL of another type than
 * the four image types is dropped. An image that cannot be read is left out, logged and counted, and
 * the rest of its message still goes to the model. The input is not changed: history keeps the URL.
 */
export async function inlineImages(messages: readonly LlmMessage[], opts: InlineImagesOptions): Promise<LlmMessage[]> {
  const urls: string[] = [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const content = messages[i].content;
    if (!Array.isArray(content)) continue;
    for (let k = content.length - 1; k >= 0; k--) {
      const part = content[k];
      if (part.type === 'image_url' && /^https?:/i.test(part.image_url.url) && !urls.includes(part.image_url.url)) urls.push(part.image_url.url);
    }
  }
  if (!urls.length && !messages.some((m) => Array.isArray(m.content) && m.content.some((p) => p.type === 'image_url'))) return [...messages];

  const fetched = new Map<string, FetchedImage | Failure>();
  const wanted = urls.slice(0, opts.maxImages);
  for (const url of urls.slice(opts.maxImages)) fetched.set(url, { reason: 'too_many_images', detail: `more than ${opts.maxImages} image URLs in the request` });
  if (wanted.length) {
    await inSpan('attachments', { 'conveyor.attachment.images': wanted.length }, async () => {
      await Promise.all(wanted.map(async (url) => fetched.set(url, await readOne(url, opts))));
    });
  }
  for (const [url, outcome] of fetched) if ('reason' in outcome) unreadable(url, outcome, opts);

  return messages.map((m) => {
    if (!Array.isArray(m.content) || !m.content.some((p) => p.type === 'image_url')) return m;
    const parts: ContentPart[] = [];
    for (const part of m.content) {
      if (part.type !== 'image_url') {
        parts.push(part);
        continue;
      }
      const url = part.image_url.url;
      const outcome = fetched.get(url);
      if (outcome !== undefined) {
        if (!('reason' in outcome)) parts.push({ type: 'image_url', image_url: { url: outcome.dataUrl } });
        continue;
      }
      const type = DATA_URL.exec(url)?.[1]?.toLowerCase();
      if (type !== undefined && IMAGE_CONTENT_TYPES.includes(type)) parts.push(part);
      else unreadable(url, type === undefined ? { reason: 'bad_url', detail: 'not an http(s) or data URL' } : { reason: 'wrong_type', detail: `data URL of type ${type}` }, opts);
    }
    return { ...m, content: parts.length ? parts : '' };
  });
}

interface Failure {
  reason: ImageFailureReason;
  detail: string;
}

async function readOne(url: string, opts: InlineImagesOptions): Promise<FetchedImage | Failure> {
  try {
    const image = await opts.source.fetch(url, opts.signal);
    attachmentMetrics.fetched.add(1, { type: image.contentType });
    return image;
  } catch (err) {
    if (err instanceof ImageFetchError) return { reason: err.reason, detail: err.message };
    throw err;
  }
}

function unreadable(url: string, failure: Failure, opts: InlineImagesOptions): void {
  attachmentMetrics.unreadable.add(1, { reason: failure.reason });
  const shown = url.startsWith('data:') ? 'data:' : redactedUrl(url);
  opts.logger.warn({ queryId: opts.queryId, url: shown, reason: failure.reason, detail: failure.detail }, 'image could not be read; the model gets the message without it');
}
