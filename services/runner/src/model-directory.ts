import { Inject, Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { CONFIG_CACHE_SAFETY_TTL_MS, ModelProviderKind, type ModelSelection } from '@conveyor/contracts';
import { dropRowsOf, INFRA, type Infra } from '@conveyor/service-kit';
import type { ResolvedModel } from '@conveyor/agent';
import { resolveApiKey } from '@conveyor/persistence';

/** Model configurations by id with their secrets resolved, cached until a `ConfigChanged` event drops them. */
@Injectable()
export class ModelDirectory {
  /** Boxed, since the cache holds no null: a model id that does not exist is remembered too. */
  private readonly cache = new LRUCache<string, { value: ResolvedModel | null }>({ max: 1_000, ttl: CONFIG_CACHE_SAFETY_TTL_MS, fetchMethod: async (id) => ({ value: await this.load(id) }) });

  constructor(@Inject(INFRA) private readonly infra: Infra) {
    infra.configCaches.register(dropRowsOf('model', this.cache));
  }

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

  private async byId(id: string): Promise<ResolvedModel | null> {
    return (await this.cache.fetch(id))?.value ?? null;
  }

  private async load(id: string): Promise<ResolvedModel | null> {
    const row = await this.infra.prisma.llmModel.findUnique({ where: { id } });
    // A kind this runner does not know (a newer writer) is refused like an unusable key, not sent as OpenAI.
    const provider = row ? ModelProviderKind.safeParse(row.provider) : null;
    if (row && provider && !provider.success) throw new Error(`unknown provider ${JSON.stringify(row.provider)}`);
    const value: ResolvedModel | null = row && {
      id: row.id,
      provider: provider?.success ? provider.data : 'openai',
      baseUrl: row.baseUrl,
      apiKey: resolveApiKey(row.apiKeyRef) ?? '',
      modelId: row.modelId,
      abilities: row.abilities,
      extraArgs: (row.extraArgs ?? {}) as Record<string, unknown>,
      timeoutMs: row.timeoutMs,
      // One price set is enough to cost the calls: the other side counts as free.
      ...(row.inputPricePerMTok !== null || row.outputPricePerMTok !== null
        ? { pricing: { inputPerMTok: row.inputPricePerMTok ?? 0, outputPerMTok: row.outputPricePerMTok ?? 0 } }
        : {}),
    };
    return value;
  }
}
