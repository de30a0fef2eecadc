import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { BanWords } from '../engine/ports.js';

/** LangBot's data/metadata/sensitive-words.json: `{mask, mask_word, words}`. */
const SensitiveWordsFile = z.object({
  mask: z.string().default('*'),
  mask_word: z.string().default(''),
  words: z.array(z.string()).max(64),
});

/** The deployment's ban-word list from a file; none configured means no ban words. */
export function loadBanWords(path: string | undefined): BanWords {
  if (!path) return { mask: '*', maskWord: '', words: [] };
  const parsed = SensitiveWordsFile.parse(JSON.parse(readFileSync(path, 'utf8')));
  return { mask: parsed.mask, maskWord: parsed.mask_word, words: parsed.words };
}
