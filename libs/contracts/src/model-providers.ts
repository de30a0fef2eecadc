import { z } from 'zod';

/**
 * The API a model is reached through: `openai` the Chat Completions API any OpenAI-compatible
 * service speaks (the default), `anthropic` Anthropic's Messages API, `gemini` Google's
 * Generative Language API (`generateContent`), `ollama` Ollama's own `/api/chat`.
 */
export const ModelProviderKind = z.enum(['openai', 'anthropic', 'gemini', 'ollama']);
export type ModelProviderKind = z.infer<typeof ModelProviderKind>;

export interface ModelPreset {
  /** What `preset:` names in conveyor.yaml and the admin API. */
  id: string;
  name: string;
  provider: ModelProviderKind;
  baseUrl: string;
  /** The abilities most of the service's chat models have; a model entry may say otherwise. */
  abilities: Array<'func_call' | 'vision'>;
  /** Where the service's keys are made. */
  keysUrl: string;
}

/**
 * Services LangBot lists as model providers, with their API base URL, so a model entry names the
 * service (`preset: deepseek`) instead of copying its URL. The OpenAI-compatible ones speak Chat
 * Completions at that URL; three are native APIs.
 */
export const MODEL_PRESETS: readonly ModelPreset[] = [
  { id: 'openai', name: 'OpenAI', provider: 'openai', baseUrl: 'https://api.openai.com/v1', abilities: ['func_call', 'vision'], keysUrl: 'https://platform.openai.com/api-keys' },
  { id: 'anthropic', name: 'Anthropic', provider: 'anthropic', baseUrl: 'https://api.anthropic.com', abilities: ['func_call', 'vision'], keysUrl: 'https://console.anthropic.com/settings/keys' },
  { id: 'gemini', name: 'Google Gemini', provider: 'gemini', baseUrl: 'https://generativelanguage.googleapis.com/v1beta', abilities: ['func_call', 'vision'], keysUrl: 'https://aistudio.google.com/apikey' },
  { id: 'ollama', name: 'Ollama', provider: 'ollama', baseUrl: 'http://127.0.0.1:11434', abilities: ['func_call'], keysUrl: 'https://ollama.com/settings/keys' },
  { id: 'deepseek', name: 'DeepSeek', provider: 'openai', baseUrl: 'https://api.deepseek.com/v1', abilities: ['func_call'], keysUrl: 'https://platform.deepseek.com/api_keys' },
  { id: 'moonshot', name: 'Moonshot (Kimi)', provider: 'openai', baseUrl: 'https://api.moonshot.cn/v1', abilities: ['func_call', 'vision'], keysUrl: 'https://platform.moonshot.cn/console/api-keys' },
  { id: 'zhipu', name: 'Zhipu AI (GLM)', provider: 'openai', baseUrl: 'https://open.bigmodel.cn/api/paas/v4', abilities: ['func_call', 'vision'], keysUrl: 'https://open.bigmodel.cn/usercenter/apikeys' },
  { id: 'siliconflow', name: 'SiliconFlow', provider: 'openai', baseUrl: 'https://api.siliconflow.cn/v1', abilities: ['func_call'], keysUrl: 'https://cloud.siliconflow.cn/account/ak' },
  { id: 'openrouter', name: 'OpenRouter', provider: 'openai', baseUrl: 'https://openrouter.ai/api/v1', abilities: ['func_call', 'vision'], keysUrl: 'https://openrouter.ai/settings/keys' },
  { id: 'groq', name: 'Groq', provider: 'openai', baseUrl: 'https://api.groq.com/openai/v1', abilities: ['func_call'], keysUrl: 'https://console.groq.com/keys' },
  { id: 'volcengine-ark', name: 'Volcengine Ark (Doubao)', provider: 'openai', baseUrl: 'https://ark.cn-beijing.volces.com/api/v3', abilities: ['func_call', 'vision'], keysUrl: 'https://console.volcengine.com/ark/region:ark+cn-beijing/apiKey' },
  { id: 'dashscope', name: 'Alibaba Cloud Bailian (DashScope compatible mode)', provider: 'openai', baseUrl: 'https://dashscope.aliyuncs.com/compatible-mode/v1', abilities: ['func_call', 'vision'], keysUrl: 'https://bailian.console.aliyun.com/?apiKey=1' },
  { id: 'xai', name: 'xAI (Grok)', provider: 'openai', baseUrl: 'https://api.x.ai/v1', abilities: ['func_call', 'vision'], keysUrl: 'https://console.x.ai' },
  { id: 'mistral', name: 'Mistral AI', provider: 'openai', baseUrl: 'https://api.mistral.ai/v1', abilities: ['func_call'], keysUrl: 'https://console.mistral.ai/api-keys' },
  { id: 'ppio', name: 'PPIO', provider: 'openai', baseUrl: 'https://api.ppinfra.com/v3/openai', abilities: ['func_call'], keysUrl: 'https://ppio.com/settings/key-management' },
  { id: 'lmstudio', name: 'LM Studio', provider: 'openai', baseUrl: 'http://127.0.0.1:1234/v1', abilities: ['func_call'], keysUrl: 'https://lmstudio.ai/docs/app/api' },
];

export const MODEL_PRESET_IDS = MODEL_PRESETS.map((p) => p.id);

export function modelPreset(id: string): ModelPreset | undefined {
  return MODEL_PRESETS.find((p) => p.id === id);
}
