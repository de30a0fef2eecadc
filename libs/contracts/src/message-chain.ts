import { z } from 'zod';
import { LIMITS } from './limits.js';

/**
 * Platform message components, in the shape LangBot's plugin SDK (and so its HTTP-bot protocol) uses.
 * Inbound adapters normalize to these; outbound adapters render from them.
 */
const idLike = z.union([z.string(), z.number().int()]);

export const PlainComponent = z.object({ type: z.literal('Plain'), text: z.string() });
export const AtComponent = z.object({ type: z.literal('At'), target: idLike, display: z.string().default('') });
export const AtAllComponent = z.object({ type: z.literal('AtAll') });
export const ImageComponent = z.object({
  type: z.literal('Image'),
  image_id: z.string().default(''),
  url: z.string().default(''),
  path: z.string().default(''),
  base64: z.string().default(''),
});
export const VoiceComponent = z.object({
  type: z.literal('Voice'),
  voice_id: z.string().default(''),
  url: z.string().default(''),
  path: z.string().default(''),
  base64: z.string().default(''),
  length: z.coerce.number().int().default(0),
});
export const FileComponent = z.object({
  type: z.literal('File'),
  id: z.string().default(''),
  name: z.string().default(''),
  size: z.coerce.number().int().default(0),
  url: z.string().default(''),
  path: z.string().default(''),
  base64: z.string().default(''),
});
/** Server-assigned id of the inbound message; `timestamp` is Unix seconds. */
export const SourceComponent = z.object({ type: z.literal('Source'), id: idLike, timestamp: z.number().int() });
export const UnknownComponent = z.object({ type: z.literal('Unknown'), text: z.string().default('') });

export type MessageComponent =
  | z.infer<typeof PlainComponent>
  | z.infer<typeof AtComponent>
  | z.infer<typeof AtAllComponent>
  | z.infer<typeof ImageComponent>
  | z.infer<typeof VoiceComponent>
  | z.infer<typeof FileComponent>
  | z.infer<typeof SourceComponent>
  | z.infer<typeof UnknownComponent>
  | QuoteComponentT
  | ForwardComponentT;

export interface QuoteComponentT {
  type: 'Quote';
  id: string | number | null;
  group_id: string | number | null;
  sender_id: string | number | null;
  target_id: string | number | null;
  origin: MessageComponent[];
}

export interface ForwardNodeT {
  sender_id: string | number | null;
  sender_name: string;
  message_chain: MessageComponent[];
  message_id: number;
}

export interface ForwardComponentT {
  type: 'Forward';
  display: { title: string; brief: string; source: string; preview: string[]; summary: string };
  node_list: ForwardNodeT[];
}

const nullableId = idLike.nullable().default(null);

export const MessageComponentSchema: z.ZodType<MessageComponent> = z.lazy(() =>
  z.discriminatedUnion('type', [
    PlainComponent,
    AtComponent,
    AtAllComponent,
    ImageComponent,
    VoiceComponent,
    FileComponent,
    SourceComponent,
    UnknownComponent,
    z.object({
      type: z.literal('Quote'),
      id: nullableId,
      group_id: nullableId,
      sender_id: nullableId,
      target_id: nullableId,
      origin: z.array(MessageComponentSchema),
    }),
    z.object({
      type: z.literal('Forward'),
      display: z
        .object({
          title: z.string().default(''),
          brief: z.string().default(''),
          source: z.string().default(''),
          preview: z.array(z.string()).default([]),
          summary: z.string().default(''),
        })
        .default({ title: '', brief: '', source: '', preview: [], summary: '' }),
      node_list: z
        .array(
          z.object({
            sender_id: nullableId,
            sender_name: z.string().default(''),
            message_chain: z.array(MessageComponentSchema),
            message_id: z.coerce.number().int().default(0),
          }),
        )
        .default([]),
    }),
  ]),
) as z.ZodType<MessageComponent>;

/**
 * Whether Quote origins or Forward node chains in `chain` nest deeper than `maxDepth` (the chain is
 * level 0). Walks with its own stack, so any depth is measured without recursion.
 */
export function nestsDeeperThan(chain: readonly unknown[], maxDepth: number): boolean {
  const pending: Array<{ chain: readonly unknown[]; depth: number }> = [{ chain, depth: 0 }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    if (next.depth > maxDepth) return true;
    for (const component of next.chain) {
      for (const nested of nestedChains(component)) pending.push({ chain: nested, depth: next.depth + 1 });
    }
  }
  return false;
}

function nestedChains(component: unknown): unknown[][] {
  if (typeof component !== 'object' || component === null) return [];
  const c = component as { type?: unknown; origin?: unknown; node_list?: unknown };
  if (c.type === 'Quote' && Array.isArray(c.origin)) return [c.origin];
  if (c.type === 'Forward' && Array.isArray(c.node_list)) {
    return c.node_list.flatMap((node: unknown) => {
      const chain = typeof node === 'object' && node !== null ? (node as { message_chain?: unknown }).message_chain : undefined;
      return Array.isArray(chain) ? [chain] : [];
    });
  }
  return [];
}

/**
 * The nesting is checked before the components are: the component schema recurses once per level, so
 * a chain nested a thousand deep would throw a RangeError out of `safeParse` instead of failing it.
 */
export const MessageChainSchema = z
  .array(z.unknown())
  .max(LIMITS.messageChainComponents)
  .refine((chain) => !nestsDeeperThan(chain, LIMITS.messageChainDepth), {
    error: `message chain nests deeper than ${LIMITS.messageChainDepth} levels`,
    abort: true,
  })
  .pipe(z.array(MessageComponentSchema));
export type MessageChain = MessageComponent[];

/** The concatenated text of the chain's Plain components, as LangBot's `str(chain)` reads for rules. */
export function plainText(chain: MessageChain): string {
  return chain.map((c) => (c.type === 'Plain' ? c.text : '')).join('');
}
