import type { ConfigChanged } from '@conveyor/contracts';

/**
 * What a cache does with a change: `event` names the row that changed; undefined means events may have
 * been missed (reconnect), so the cache drops everything.
 */
export type ConfigCacheHandler = (event: ConfigChanged | undefined) => void;

/** The configuration caches of this process, told about every `ConfigChanged` event it receives. */
export class ConfigCaches {
  private readonly handlers = new Set<ConfigCacheHandler>();

  register(handler: ConfigCacheHandler): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  changed(event: ConfigChanged): void {
    for (const handler of this.handlers) handler(event);
  }

  reset(): void {
    for (const handler of this.handlers) handler(undefined);
  }
}

/** A handler for a cache keyed by the id of one kind of row. */
export function dropRowsOf(kind: ConfigChanged['kind'], cache: { delete(id: string): unknown; clear(): void }): ConfigCacheHandler {
  return (event) => {
    if (!event) cache.clear();
    else if (event.kind === kind) cache.delete(event.id);
  };
}
