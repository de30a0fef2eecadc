// The terms full-text search indexes and asks for. Postgres' own parsers split Chinese and Japanese
// text only where a space is (none), so the terms are cut here, the same way for a chunk and for a
// question: letters and digits in words (English words stemmed, common ones dropped), and runs of
// Han, kana or Hangul as overlapping pairs of characters (bigrams), which is how Lucene's CJK analyzer
// and most engines without a dictionary index those scripts. The terms reach Postgres as a `tsvector`
// or `tsquery` literal, so no text search configuration of the server is involved.
import { stemmer } from 'stemmer';

/** Han (with extensions and compatibility ideographs), hiragana, katakana and Hangul. */
const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u;
/** A run of CJK characters, or a word of other letters, marks and digits. */
const TOKEN = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]+|[\p{L}\p{M}\p{N}]+/gu;

/** English words too common to tell chunks apart; a question's "what is the ..." would match every chunk. */
const ENGLISH_STOPWORDS = new Set(
  ('a about above after again against all am an and any are as at be because been before being below between both but by can ' +
    'could did do does doing down during each few for from further had has have having he her here hers herself him himself his how ' +
    'i if in into is it its itself just me more most my myself no nor not now of off on once only or other our ours ourselves out ' +
    'over own same she should so some such than that the their theirs them themselves then there these they this those through to ' +
    'too under until up very was we were what when where which while who whom why will with would you your yours yourself yourselves')
    .split(' '),
);

/** Longest term kept: a longer "word" (a hash, base64) is noise and would bloat the index. */
const MAX_TERM_LENGTH = 64;
/** Terms of one question: enough for a long question, bounded so a pasted document cannot make a huge query. */
export const MAX_QUERY_TERMS = 64;

/**
 * The terms of `text` in order, repeats kept (a chunk's positions and frequencies come from them).
 * `forQuery` leaves out the single characters of a CJK run, which an indexed chunk also holds but which
 * match too much to help a question; a one-character run keeps its character either way.
 */
export function searchTerms(text: string, options: { forQuery?: boolean } = {}): string[] {
  const terms: string[] = [];
  for (const [token] of text.normalize('NFKC').toLowerCase().matchAll(TOKEN)) {
    if (CJK.test(token)) {
      const chars = Array.from(token);
      if (chars.length === 1) {
        terms.push(chars[0]);
        continue;
      }
      for (let i = 0; i < chars.length; i++) {
        if (!options.forQuery) terms.push(chars[i]);
        if (i + 1 < chars.length) terms.push(chars[i] + chars[i + 1]);
      }
    } else if (token.length <= MAX_TERM_LENGTH && !ENGLISH_STOPWORDS.has(token)) {
      terms.push(/^[a-z]+$/.test(token) ? stemmer(token) : token);
    }
  }
  return terms;
}

/** A lexeme quoted for a tsvector or tsquery literal: in quotes, with quotes and backslashes escaped. */
const quoted = (term: string) => `'${term.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;

/** Highest position a tsvector holds; later terms share it (they still count, at the last position). */
const MAX_POSITION = 16_383;
/** Positions Postgres keeps per lexeme; more are dropped by the server anyway. */
const MAX_POSITIONS_PER_TERM = 256;

/** A `tsvector` literal of the chunk's terms with their positions, for `$n::tsvector`. */
export function tsvectorLiteral(text: string): string {
  const positions = new Map<string, number[]>();
  searchTerms(text).forEach((term, i) => {
    const at = positions.get(term);
    if (!at) positions.set(term, [Math.min(i + 1, MAX_POSITION)]);
    else if (at.length < MAX_POSITIONS_PER_TERM) at.push(Math.min(i + 1, MAX_POSITION));
  });
  return Array.from(positions, ([term, at]) => `${quoted(term)}:${at.join(',')}`).join(' ');
}

/**
 * A `tsquery` literal matching a chunk holding any of the question's terms (ranking then prefers the
 * chunks holding more of them, and more often), or null when the question has no term to search by.
 */
export function tsqueryLiteral(question: string): string | null {
  const terms = [...new Set(searchTerms(question, { forQuery: true }))].slice(0, MAX_QUERY_TERMS);
  return terms.length ? terms.map(quoted).join(' | ') : null;
}
