/** An OpenAI-compatible model endpoint with its secret resolved, as the runner uses it. */
export interface ResolvedModel {
  /** Conveyor's id of the model configuration (LlmModel.id). */
  id: string;
  baseUrl: string;
  apiKey: string;
  /** The provider's model name sent in requests. */
  modelId: string;
  abilities: string[];
  extraArgs: Record<string, unknown>;
  timeoutMs: number;
}

/** Resolves `env:NAME` references; the database never holds the secret itself. */
export function resolveApiKey(ref: string, env: NodeJS.ProcessEnv = process.env): string {
  if (!ref) return '';
  if (ref.startsWith('env:')) {
    const value = env[ref.slice(4)];
    if (value === undefined) throw new Error(`API key variable ${ref.slice(4)} is not set`);
    return value;
  }
  throw new Error(`unsupported API key reference ${JSON.stringify(ref.split(':')[0])}; use env:NAME`);
}
