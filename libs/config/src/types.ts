import type { HumanHandoff, ModelProviderKind } from '@conveyor/contracts';
import type { PipelineConfig, PipelineStageName } from '@conveyor/pipeline';

type Json = Record<string, unknown>;

/** conveyor.yaml after interpolation, validation and defaults: what applyConfigFile writes. */
export interface ConveyorConfig {
  /** The file it came from, for error messages. */
  file: string;
  models: Array<{
    id: string;
    name: string;
    provider: ModelProviderKind;
    baseUrl: string;
    /** `env:NAME`, or empty for no key. */
    apiKeyRef: string;
    modelId: string;
    abilities: Array<'func_call' | 'vision' | 'embedding' | 'rerank'>;
    extraArgs: Json;
    timeoutMs: number;
    /** Prices per 1M tokens; null: none. */
    inputPricePerMTok: number | null;
    outputPricePerMTok: number | null;
  }>;
  pipelines: Array<{
    id: string;
    name: string;
    stages: PipelineStageName[];
    config: PipelineConfig;
    /** LangBot's `extensions_preferences`: the MCP servers the pipeline's runs may use. */
    /** `enable_all_mcp_servers` undefined: the file leaves it out (applyConfigFile decides: false when new, else as stored). */
    /** `enable_all_skills` and `skills` undefined: the file leaves them out (applyConfigFile keeps what is stored). */
    extensionsPreferences: { enable_all_mcp_servers?: boolean; mcp_servers: string[]; enable_all_plugins: boolean; plugins: string[]; enable_all_skills?: boolean; skills?: string[] };
  }>;
  /** `humanHandoff` undefined: the file leaves it out (applyConfigFile keeps what is stored). */
  bots: Array<{ id: string; name: string; adapter: string; adapterConfig: Json; pipelineId: string; enabled: boolean; humanHandoff?: HumanHandoff }>;
  mcpServers: Array<{ id: string; name: string; transport: 'stdio' | 'http' | 'sse'; config: Json; enabled: boolean }>;
  knowledgeBases: Array<{
    id: string;
    name: string;
    description: string;
    embeddingModelId: string;
    topK: number;
    chunkSize: number;
    chunkOverlap: number;
    rerankModelId: string | null;
    retrievalMode: 'vector' | 'fulltext' | 'hybrid';
  }>;
  /** The files of each knowledge base, as absolute paths (the file's entries are relative to it). */
  knowledgeDocuments: Array<{ knowledgeBaseId: string; path: string }>;
  /** The Agent Skills to install: each a folder holding a SKILL.md, as an absolute path (the file's entries are relative to it). */
  skills: Array<{ path: string }>;
}
