import { Inject, Injectable } from '@nestjs/common';
import type { ModelSelection } from '@conveyor/contracts';
import { INFRA, type Infra } from '@conveyor/service-kit';
import type { ResolvedModel } from '@conveyor/agent';
import { resolveApiKey } from '@conveyor/persistence';

const TTL_MS = 5_000;

/** Model configurations by id with their secrets resolved, cached briefly. */
@Injectable()
export class ModelDirectory {
  private readonly cache = new Map<string, { value: ResolvedModel | null; expires: number }>();

  constructor(@Inject(INFRA) private readonly infra: Infra) {}

  /** The primary then the fallbacks, skipping ids that do not exist (LangBot logs and skips them too). */
  async resolve(selection: ModelSelection): Promise<ResolvedModel[]> {
    const ids = [selection.primary, ...selection.fallbacks].filter((id) => id);
    const models = await Promise.all(
      ids.map((id) =>
        this.byId(id).catch((err: Error) => {
          // A model whose key cannot be resolved is skipped like a missing one; the next model may work.
          this.infra.logger.error({ model: id, err: err.message }, 'model configuration unusable');
          return null;
        }),
      ),
    );
    const missing = ids.filter((_, i) => !models[i]);
    if (missing.length) this.infra.logger.warn({ missing }, 'configured models not found');
    return models.filter((m): m is ResolvedModel => m !== null);
  }

  private async byId(id: string): Promise<ResolvedModel | null> {
    const hit = this.cache.get(id);
    if (hit && hit.expires > Date.now()) return hit.value;
    const row = await this.infra.prisma.llmModel.findUnique({ where: { id } });
    const value: ResolvedModel | null = row && {
      id: row.id,
      baseUrl: row.baseUrl,
      apiKey: resolveApiKey(row.apiKeyRef) ?? '',
      modelId: row.modelId,
      abilities: row.abilities,
      extraArgs: (row.extraArgs ?? {}) as Record<string, unknown>,
      timeoutMs: row.timeoutMs,
    };
    this.cache.set(id, { value, expires: Date.now() + TTL_MS });
    return value;
  }
}
