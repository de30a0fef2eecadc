import { ADAPTER_NAME_RE } from '@conveyor/contracts';
import type { Platform } from '@conveyor/platform-kit';

/** Adapter name → platform. Built once from a list; a repeated or malformed name is a programming error. */
export class PlatformRegistry {
  private readonly byName: ReadonlyMap<string, Platform>;

  constructor(platforms: readonly Platform[]) {
    const byName = new Map<string, Platform>();
    for (const p of platforms) {
      if (!ADAPTER_NAME_RE.test(p.name)) throw new Error(`platform name ${JSON.stringify(p.name)} is not a valid adapter name`);
      if (byName.has(p.name)) throw new Error(`platform ${p.name} is registered twice`);
      byName.set(p.name, p);
    }
    this.byName = byName;
  }

  /** The platform of that adapter name, or undefined (an unknown or mistyped adapter). */
  get(name: string): Platform | undefined {
    return this.byName.get(name);
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  all(): Platform[] {
    return [...this.byName.values()];
  }

  /** The adapter names a bot in conveyor.yaml may have (the web chat is every bot's, not one's own). */
  configurableNames(): string[] {
    return this.all().filter((p) => p.configurable).map((p) => p.name);
  }
}
