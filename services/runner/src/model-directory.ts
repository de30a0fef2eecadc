import { Inject, Injectable } from '@nestjs/common';
import type { ModelSelection } from '@conveyor/contracts';
import { INFRA, type Infra } from '@conveyor/service-kit';
import type { ResolvedModel } from '@conveyor/agent';

/** The pipeline's models with their secrets resolved, from the configuration read model. */
@Injectable()
export class ModelDirectory {
  constructor(@Inject(INFRA) private readonly infra: Infra) {}

  /**
   * The primary then the fallbacks, skipping ids that do not exist (LangBot logs and skips them too),
   * each with the pipeline's reasoning level for it.
   */
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
    return models.filter((m): m is ResolvedModel => m !== null).map((m) => {
      const reasoning = selection.reasoning?.[m.id];
      return reasoning && reasoning !== 'provider_default' ? { ...m, reasoning } : m;
    });
  }

  /** One model by id; null when it does not exist or its key cannot be resolved (logged). */
  async find(id: string): Promise<ResolvedModel | null> {
    return this.byId(id).catch((err: Error) => {
      this.infra.logger.error({ model: id, err: err.message }, 'model configuration unusable');
      return null;
    });
  }

  private byId(id: string): Promise<ResolvedModel | null> {
    return this.infra.config.model(id);
  }
}
