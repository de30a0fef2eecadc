/**
 * A signal that follows `parent` only until `release()`. The openai SDK adds an abort listener to the
 * signal it is given and never removes it: handed a consumer's long-lived signal, every model call
 * would leave a listener (and the SDK's AbortController) on it for the life of the process, and adding
 * to an ever longer listener list costs more each time.
 */
export function scopedSignal(parent: AbortSignal | undefined): { signal: AbortSignal | undefined; release(): void } {
  if (!parent) return { signal: undefined, release: () => undefined };
  const controller = new AbortController();
  if (parent.aborted) {
    controller.abort(parent.reason);
    return { signal: controller.signal, release: () => undefined };
  }
  const forward = () => controller.abort(parent.reason);
  parent.addEventListener('abort', forward, { once: true });
  return { signal: controller.signal, release: () => parent.removeEventListener('abort', forward) };
}
