import RE2 from 're2';

// User-supplied patterns (group rules, ignore rules, ban words) run on RE2, whose matching time is
// linear in the input, so no pattern can hang a worker the way a backtracking engine can. The limits
// are LangBot's (utils/safe_regex.py); its 50 ms CPU budget is unnecessary with a linear engine.
export const REGEX_LIMITS = {
  maxPatterns: 64,
  maxPatternChars: 1024,
  maxInputBytes: 1024 * 1024,
  maxReplacementChars: 64,
  maxOutputBytes: 2 * 1024 * 1024,
} as const;

export class UnsafeRegexError extends Error {
  override readonly name = 'UnsafeRegexError';
}

type Mode = 'match' | 'search' | 'global';
const cache = new Map<string, RE2>();
const CACHE_MAX = 4096;

/** Compiles (cached) or throws UnsafeRegexError for a pattern RE2 rejects or that breaks the limits. */
function compile(pattern: string, mode: Mode): RE2 {
  const key = `${mode}\u0000${pattern}`;
  const hit = cache.get(key);
  if (hit) return hit;
  if (pattern.length > REGEX_LIMITS.maxPatternChars) throw new UnsafeRegexError(`pattern longer than ${REGEX_LIMITS.maxPatternChars} characters`);
  let re: RE2;
  try {
    // Python's re.match anchors at the start only; `^` without the m flag means the start of the input.
    re = new RE2(mode === 'match' ? `^(?:${pattern})` : pattern, mode === 'global' ? 'gu' : 'u');
  } catch (err) {
    throw new UnsafeRegexError(`invalid pattern ${JSON.stringify(pattern)}: ${(err as Error).message}`);
  }
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
  cache.set(key, re);
  return re;
}

function checkInput(patterns: readonly string[], input: string): void {
  if (patterns.length > REGEX_LIMITS.maxPatterns) throw new UnsafeRegexError(`more than ${REGEX_LIMITS.maxPatterns} patterns`);
  if (Buffer.byteLength(input) > REGEX_LIMITS.maxInputBytes) throw new UnsafeRegexError('input larger than 1 MiB');
}

/** Index of the first pattern matching at the start (`match`) or anywhere (`search`), or -1. Throws UnsafeRegexError. */
export function firstMatch(patterns: readonly string[], input: string, mode: 'match' | 'search'): number {
  checkInput(patterns, input);
  for (let i = 0; i < patterns.length; i++) if (compile(patterns[i], mode).test(input)) return i;
  return -1;
}

/**
 * Each pattern in turn replaces its matches with `maskWord`, or with `mask` repeated once per matched
 * character (LangBot's ban-word masking). Returns the new text and whether anything matched.
 */
export function maskAll(patterns: readonly string[], input: string, mask: string, maskWord: string): { text: string; matched: boolean } {
  checkInput(patterns, input);
  let text = input;
  let matched = false;
  for (const pattern of patterns) {
    text = compile(pattern, 'global').replace(text, (m: string) => {
      matched = true;
      const out = maskWord !== '' ? maskWord : mask.repeat([...m].length);
      return [...out].slice(0, REGEX_LIMITS.maxReplacementChars).join('');
    });
    if (Buffer.byteLength(text) > REGEX_LIMITS.maxOutputBytes) throw new UnsafeRegexError('masked output larger than 2 MiB');
  }
  return { text, matched };
}
