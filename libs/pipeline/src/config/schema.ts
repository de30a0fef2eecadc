import { z } from 'zod';
import { BOX_SESSION_TEMPLATES, ReasoningLevel, RunnerKind } from '@conveyor/contracts';
import { coerceBoolean, coerceInteger, coerceNumber } from './coerce.js';

// The pipeline config (trigger, safety, ai, output) in LangBot's JSON shape, so a LangBot pipeline's
// JSON loads unchanged. Objects are loose: keys this schema does not know (other runners' settings,
// future LangBot keys) are kept, as LangBot keeps them.
// Defaults are applied before parsing (withPipelineDefaults), so every key here is required.

const int = (min?: number) => z.preprocess(coerceInteger, min === undefined ? z.number().int() : z.number().int().min(min));
const num = () => z.preprocess(coerceNumber, z.number());
const bool = () => z.preprocess(coerceBoolean, z.boolean());
const strings = z.array(z.string());

// A runner Conveyor does not implement is refused rather than run as the local agent.
const Runner = z.enum(RunnerKind.options, {
  error: (issue) => `unknown runner ${JSON.stringify(issue.input)}; Conveyor runs ${RunnerKind.options.join(', ')}`,
});

const ModelSelector = z.union([
  z.string(),
  z.looseObject({
    primary: z.string(),
    fallbacks: strings.default([]),
    /** LangBot's reasoning level per model id, sent to each model as its provider's parameter. */
    reasoning: z.record(z.string(), z.enum(ReasoningLevel.options, {
      error: (issue) => `unknown reasoning level ${JSON.stringify(issue.input)}; one of ${ReasoningLevel.options.join(', ')}`,
    })).optional(),
  }),
], { error: 'must be a model id or {primary: <model id>, fallbacks: [<model id>, ...]}' });

export const PipelineConfigSchema = z.looseObject({
  trigger: z.looseObject({
    'group-respond-rules': z.looseObject({ at: bool(), prefix: strings, regexp: strings, random: num() }),
    'access-control': z.looseObject({ mode: z.enum(['blacklist', 'whitelist']), blacklist: strings, whitelist: strings }),
    'ignore-rules': z.looseObject({ prefix: strings, regexp: strings }),
    'message-aggregation': z.looseObject({ enabled: bool(), delay: num() }),
    misc: z.looseObject({ 'combine-quote-message': bool() }),
  }),
  safety: z.looseObject({
    'content-filter': z.looseObject({ scope: z.enum(['all', 'income-msg', 'output-msg']), 'check-sensitive-words': bool() }),
    'rate-limit': z.looseObject({ 'window-length': int(1), limitation: int(0), strategy: z.enum(['drop', 'wait']) }),
  }),
  ai: z.looseObject({
    runner: z.looseObject({ runner: Runner, 'expire-time': int(0) }),
    'local-agent': z.looseObject({
      model: ModelSelector,
      'max-round': int(1),
      prompt: z.array(z.looseObject({ role: z.string(), content: z.string() })),
      'knowledge-bases': strings.default([]),
      /** Legacy single knowledge base (older LangBot configs); `__none__` means none. */
      'knowledge-base': z.string().optional(),
      'rerank-model': z.string().default(''),
      'rerank-top-k': int(0).default(5),
      /** LangBot's sandbox sharing scope: which conversations work in one workspace. */
      'box-session-id-template': z.enum(BOX_SESSION_TEMPLATES, {
        error: (issue) => `unknown box-session-id-template ${JSON.stringify(issue.input)}; one of ${BOX_SESSION_TEMPLATES.join(', ')}`,
      }).default('{launcher_type}_{launcher_id}'),
      /**
       * Conveyor's switch for the sandbox tools (LangBot offers them whenever a Box backend runs; here a
       * pipeline opts in, so a deployment without the sandbox role changes no model's tool list).
       */
      'box-enabled': bool().default(false),
      /** Whether the sandbox's commands reach the network (off: no network namespace but loopback). */
      'box-network': bool().default(false),
    }),
  }),
  output: z.looseObject({
    'long-text-processing': z.looseObject({ threshold: int(1), strategy: z.enum(['none', 'forward', 'image']), 'font-path': z.string() }),
    'force-delay': z.looseObject({ min: num(), max: num() }),
    misc: z.looseObject({
      'exception-handling': z.enum(['show-error', 'show-hint', 'hide']),
      'failure-hint': z.string(),
      'at-sender': bool(),
      'quote-origin': bool(),
      'track-function-calls': bool(),
      'remove-think': bool(),
    }),
  }),
});

export type PipelineSettings = z.output<typeof PipelineConfigSchema>;
