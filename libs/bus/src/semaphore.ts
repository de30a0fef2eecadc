/**
 * A counting semaphore. `acquire()` resolves true when a slot is taken, or false once `cancel()` was
 * called (waiters are released without a slot, and later calls return false at once).
 */
export class Semaphore {
  #free: number;
  #waiters: Array<(ok: boolean) => void> = [];
  #cancelled = false;

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`semaphore size must be a positive integer, got ${size}`);
    this.#free = size;
  }

  get inUse(): number {
    return this.size - this.#free;
  }

  acquire(): Promise<boolean> {
    if (this.#cancelled) return Promise.resolve(false);
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  release(): void {
    const next = this.#waiters.shift();
    if (next) next(true);
    else this.#free++;
  }

  cancel(): void {
    this.#cancelled = true;
    for (const w of this.#waiters.splice(0)) w(false);
  }
}
