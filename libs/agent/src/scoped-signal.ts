/** The live scopes of each parent signal; one listener per parent fans its abort out to them. */
const scopes = new WeakMap<AbortSignal, Set<AbortController>>();

/**
 * A signal that follows `parent` only until `release()`. The openai and MCP SDKs add an abort listener
 * to the signal they are given and never remove it: handed a consumer's long-lived signal, every call
 * would leave a listener (and the SDK's AbortController) on it for the life of the process. The parent
 * keeps a single listener whatever the number of scopes, so taking and releasing one is O(1) even with
 * thousands of runs in flight.
 */
export function scopedSignal(parent: AbortSignal | undefined): { signal: AbortSignal | undefined; release(): void } {
  if (!parent) return { signal: undefined, release: () => undefined };
  const controller = new AbortController();
  if (parent.aborted) {
    controller.abort(parent.reason);
    return { signal: controller.signal, release: () => undefined };
  }
  let live = scopes.get(parent);
  if (!live) {
    const set = new Set<AbortController>();
    parent.addEventListener('abort', () => {
      for (const c of set) c.abort(parent.reason);
      set.clear();
    }, { once: true });
    scopes.set(parent, set);
    live = set;
  }
  live.add(controller);
  const set = live;
  return { signal: controller.signal, release: () => void set.delete(controller) };
}
