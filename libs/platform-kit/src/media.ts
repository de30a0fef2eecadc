import type { MessageComponent } from '@conveyor/contracts';

// Images a platform only names (a download code, an image key, an mxc:// URL, a media id) and that
// only the bot's credentials can read: the inbound side resolves them before the query is published.

/** What stands in a chain for an image a platform could not pass on (too large, its download failed, past the bound). */
export const IMAGE_PLACEHOLDER = '[Image]';

/** Images resolved per message, at most (a runner reads a few images per run anyway); the rest become placeholders. */
export const MAX_IMAGES_PER_MESSAGE = 4;

type ImageComponent = Extract<MessageComponent, { type: 'Image' }>;

/** An image the platform named but did not hand over: its id, no URL and no bytes yet. */
export function pendingImage(imageId: string): ImageComponent {
  return { type: 'Image', image_id: imageId, url: '', path: '', base64: '' };
}

function isPendingImage(c: MessageComponent): c is ImageComponent {
  return c.type === 'Image' && c.url === '' && c.base64 === '';
}

/** Whether the chain holds images still to be resolved. */
export function hasPendingImages(chain: readonly MessageComponent[]): boolean {
  return chain.some(isPendingImage);
}

/** The chain with every pending image replaced by the placeholder (a callback answered before anything is downloaded). */
export function imagePlaceholders(chain: readonly MessageComponent[]): MessageComponent[] {
  return chain.map((c) => (isPendingImage(c) ? { type: 'Plain', text: IMAGE_PLACEHOLDER } : c));
}

/**
 * The chain with its pending images resolved by `resolve` (a URL the runner reads, or the bytes
 * inlined), at most MAX_IMAGES_PER_MESSAGE; one without an id, past the bound, or whose resolution
 * fails (`failed` is told why) becomes the placeholder.
 */
export async function resolvePendingImages(
  chain: readonly MessageComponent[],
  resolve: (image: ImageComponent) => Promise<ImageComponent>,
  failed: (reason: string) => void,
): Promise<MessageComponent[]> {
  let resolved = 0;
  const out: MessageComponent[] = [];
  for (const c of chain) {
    if (!isPendingImage(c)) {
      out.push(c);
      continue;
    }
    if (!c.image_id || resolved >= MAX_IMAGES_PER_MESSAGE) {
      out.push({ type: 'Plain', text: IMAGE_PLACEHOLDER });
      continue;
    }
    resolved++;
    try {
      out.push(await resolve(c));
    } catch (err) {
      failed(err instanceof Error ? err.message : String(err));
      out.push({ type: 'Plain', text: IMAGE_PLACEHOLDER });
    }
  }
  return out;
}

/** A downloaded image as a data URL on its component, as LangBot passes images on; a content type that is no image's reads as `fallbackType`. */
export function inlinedImage(image: ImageComponent, media: { bytes: Buffer; contentType: string }, fallbackType = 'image/png'): ImageComponent {
  const type = media.contentType.startsWith('image/') ? media.contentType : fallbackType;
  return { ...image, base64: `data:${type};base64,${media.bytes.toString('base64')}` };
}

/** A download over its size bound; recognised by `code`. */
export class MediaTooLargeError extends Error {
  readonly code = 'MEDIA_TOO_LARGE';

  constructor(readonly maxBytes: number, readonly declared?: number) {
    super(declared !== undefined ? `a file of ${declared} bytes, over ${maxBytes}` : `a file over ${maxBytes} bytes`);
    this.name = 'MediaTooLargeError';
  }
}

/**
 * A download's bytes, read no further than `maxBytes`: a declared length over it is refused before
 * reading, a body growing past it is cut off (the stream cancelled by leaving the loop).
 */
export async function readBoundedMedia(body: AsyncIterable<Uint8Array> | null | undefined, maxBytes: number, declaredLength?: string | null): Promise<Buffer> {
  const declared = declaredLength ? Number(declaredLength) : NaN;
  if (Number.isFinite(declared) && declared > maxBytes) {
    // Left at its first chunk: leaving the loop gives the body back (a fetch body cancelled, a stream
    // destroyed); an iterator closed before it started would not run that clean-up.
    if (body) for await (const _ of body) break;
    throw new MediaTooLargeError(maxBytes, declared);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body ?? []) {
    size += chunk.byteLength;
    if (size > maxBytes) throw new MediaTooLargeError(maxBytes);
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}
