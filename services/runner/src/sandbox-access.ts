import { Inject, Injectable } from '@nestjs/common';
import { SkillStore } from '@conveyor/persistence';
import { SandboxClient } from '@conveyor/sandbox';
import { INFRA } from '@conveyor/service-kit';
import type { SkillCatalog, SkillEntry } from '@conveyor/agent';
import type { RunnerInfra } from './env.js';

/**
 * The runner's way to the sandbox role (`SandboxClient` over core NATS) and to the installed skills:
 * their list from the process's configuration cache (dropped when a skill changes), a skill's
 * instructions read when a run activates it.
 */
@Injectable()
export class SandboxAccess implements SkillCatalog {
  readonly client: SandboxClient;
  private readonly store: SkillStore;

  constructor(@Inject(INFRA) private readonly infra: RunnerInfra) {
    this.client = new SandboxClient({ nc: infra.nc, topology: infra.topology, overheadMs: infra.env.SANDBOX_CALL_OVERHEAD_MS });
    this.store = new SkillStore(infra.db);
  }

  async list(bound: 'all' | readonly string[]): Promise<SkillEntry[]> {
    const all = await this.infra.config.skills();
    const names = bound === 'all' ? undefined : new Set(bound);
    return all.filter((s) => !names || names.has(s.name));
  }

  async instructions(name: string): Promise<(SkillEntry & { instructions: string }) | undefined> {
    const skill = await this.store.get(name);
    return skill && { name: skill.name, description: skill.description, revision: skill.revision, instructions: skill.instructions };
  }
}
