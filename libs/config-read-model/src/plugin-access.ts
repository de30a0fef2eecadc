import type { ModelSelection } from '@conveyor/contracts';
import { bindsPlugin, knowledgeBaseIds, modelOf } from '@conveyor/pipeline';
import type { PrismaClient } from '@conveyor/persistence';

/** Whether a pipeline exists and binds the plugin, and the models its local agent runs. */
export type PluginPipelineAccess = { access: 'bound'; models: ModelSelection } | { access: 'not_bound' } | { access: 'not_found' };

type LocalAgentConfig = { model?: unknown; 'knowledge-bases'?: unknown; 'knowledge-base'?: unknown };

/** The `ai.local-agent` part of a stored pipeline config, or an empty one. */
function localAgentOf(config: unknown): LocalAgentConfig {
  const la = (config as { ai?: { 'local-agent'?: unknown } } | null)?.ai?.['local-agent'];
  return la && typeof la === 'object' ? (la as LocalAgentConfig) : {};
}

/**
 * What a plugin may reach through the host API, read from the stored pipelines (LangBot binds plugins
 * per pipeline: `enable_all_plugins`, or the `plugins` list): a pipeline's models when it binds the
 * plugin, and the knowledge bases such pipelines retrieve from. Read at each call: host calls are not
 * on the message path, and a binding removed in the console counts at once.
 */
export class PluginAccess {
  constructor(private readonly prisma: Pick<PrismaClient, 'pipeline' | 'bot'>) {}

  async pipeline(plugin: string, pipelineId: string): Promise<PluginPipelineAccess> {
    const row = await this.prisma.pipeline.findUnique({ where: { id: pipelineId }, select: { config: true, extensionsPreferences: true } });
    if (!row) return { access: 'not_found' };
    if (!bindsPlugin(row.extensionsPreferences, plugin)) return { access: 'not_bound' };
    const model = localAgentOf(row.config).model;
    const selection = typeof model === 'string' || (model && typeof model === 'object' && typeof (model as { primary?: unknown }).primary === 'string')
      ? modelOf(model as Parameters<typeof modelOf>[0])
      : { primary: '', fallbacks: [] };
    return { access: 'bound', models: selection };
  }

  /** Whether a bot exists and its pipeline binds the plugin. */
  async bot(plugin: string, botId: string): Promise<'bound' | 'not_bound' | 'not_found'> {
    const row = await this.prisma.bot.findUnique({ where: { id: botId }, select: { pipeline: { select: { extensionsPreferences: true } } } });
    if (!row) return 'not_found';
    return bindsPlugin(row.pipeline.extensionsPreferences, plugin) ? 'bound' : 'not_bound';
  }

  async retrievesFrom(plugin: string, knowledgeBaseId: string): Promise<boolean> {
    const rows = await this.prisma.pipeline.findMany({ select: { config: true, extensionsPreferences: true } });
    return rows.some((row) => {
      if (!bindsPlugin(row.extensionsPreferences, plugin)) return false;
      const la = localAgentOf(row.config);
      const list = Array.isArray(la['knowledge-bases']) ? la['knowledge-bases'].filter((id): id is string => typeof id === 'string') : undefined;
      return knowledgeBaseIds(list, typeof la['knowledge-base'] === 'string' ? la['knowledge-base'] : undefined).includes(knowledgeBaseId);
    });
  }
}
