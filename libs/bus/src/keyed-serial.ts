/**
 * Runs tasks one at a time per key, in the order they were submitted, and different keys in
 * parallel. Consumers pull in stream order, so chaining by key keeps one session's events in order
 * while other sessions proceed.
 */
export class KeyedSerial {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(task, task);
    const tail = result.catch(() => undefined);
    this.tails.set(key, tail);
    // Forget the key once its last task settles, so the map holds only keys with work pending.
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  get pendingKeys(): number {
    return this.tails.size;
  }
}
