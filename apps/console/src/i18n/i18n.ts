// The console's languages: typed message catalogs (English is the reference; every other catalog must
// have exactly its keys, which the compiler checks), `{name}` interpolation with numbers formatted for
// the locale, plural forms chosen by Intl.PluralRules, and dates and durations formatted with Intl.
import { en, type EnglishCatalog } from './messages-en.js';
import { ja } from './messages-ja.js';
import { ko } from './messages-ko.js';
import { ru } from './messages-ru.js';
import { vi } from './messages-vi.js';
import { zhHans } from './messages-zh-hans.js';
import { zhHant } from './messages-zh-hant.js';

export const LOCALES = ['zh-Hans', 'en', 'zh-Hant', 'ja', 'ko', 'ru', 'vi'] as const;
export type Locale = (typeof LOCALES)[number];

/** Each language's name in itself, for the switcher. */
export const LOCALE_NAMES: Record<Locale, string> = { 'zh-Hans': '简体中文', en: 'English', 'zh-Hant': '繁體中文', ja: '日本語', ko: '한국어', ru: 'Русский', vi: 'Tiếng Việt' };

/** Where this browser keeps the reader's choice (LangBot's web UI keeps its own the same way, under its own key). */
export const LOCALE_STORAGE_KEY = 'conveyor-console-language';

/**
 * Plural forms keyed by Intl.PluralRules categories; `other` is always there (Chinese, Japanese,
 * Korean and Vietnamese have no other), Russian adds `few` and `many`.
 */
export interface PluralForms {
  zero?: string;
  one?: string;
  two?: string;
  few?: string;
  many?: string;
  other: string;
}
type Message = string | PluralForms;

/** Any catalog: the English keys, each a string or plural forms as English has it. */
export type Catalog = { [K in keyof EnglishCatalog]: EnglishCatalog[K] extends string ? string : PluralForms };
export type MessageKey = keyof EnglishCatalog;

/** `{name}` placeholders of a message, read from the English text at compile time. */
type Placeholders<S> = S extends `${string}{${infer P}}${infer Rest}` ? P | Placeholders<Rest> : never;
type PlaceholdersOf<M> = M extends { other: infer O } ? Placeholders<O> | 'count' : Placeholders<M>;
export type Params<K extends MessageKey> = Record<PlaceholdersOf<EnglishCatalog[K]>, string | number>;
/** `t(key)` for a message without placeholders, `t(key, {…})` with exactly its placeholders. */
export type ParamArgs<K extends MessageKey> = [PlaceholdersOf<EnglishCatalog[K]>] extends [never] ? [] : [Params<K>];

export const CATALOGS: Record<Locale, Catalog> = { en, 'zh-Hans': zhHans, 'zh-Hant': zhHant, ja, ko, ru, vi };

/** Chinese as written in Taiwan, Hong Kong and Macau: Traditional characters. */
const TRADITIONAL_CHINESE = /^zh-(hant|tw|hk|mo)(-|$)/;

/**
 * The locale to start with, as LangBot's web UI picks its own: the stored choice, else the first of
 * the browser's languages the console has (`zh-TW`, `zh-HK`, `zh-MO` and `zh-Hant*` read Traditional
 * Chinese, any other `zh*` Simplified; `ja*`, `ko*`, `ru*`, `vi*`, `en*` their language), else
 * Simplified Chinese, LangBot's fallback.
 */
export function detectLocale(stored: string | null, browserLanguages: readonly string[]): Locale {
  const chosen = LOCALES.find((l) => l === stored);
  if (chosen) return chosen;
  for (const tag of browserLanguages) {
    const lower = tag.toLowerCase();
    if (TRADITIONAL_CHINESE.test(lower)) return 'zh-Hant';
    if (lower === 'zh' || lower.startsWith('zh-')) return 'zh-Hans';
    const language = lower.split('-')[0];
    const match = (['en', 'ja', 'ko', 'ru', 'vi'] as const).find((l) => l === language);
    if (match) return match;
  }
  return 'zh-Hans';
}

export function isLocale(value: string | null | undefined): value is Locale {
  return LOCALES.some((l) => l === value);
}

/** The placeholders of one message text, sorted; used to check that catalogs agree. */
export function placeholdersOf(text: string): string[] {
  return [...new Set([...text.matchAll(/\{([A-Za-z][A-Za-z0-9]*)\}/g)].map((m) => m[1]))].sort();
}

export interface Translator {
  readonly locale: Locale;
  t<K extends MessageKey>(key: K, ...params: ParamArgs<K>): string;
  /** A message whose key is only known at run time (a pipeline config key, an enum value); undefined when the catalog has none. */
  lookup(key: string, params?: Record<string, string | number>): string | undefined;
  number(n: number, options?: Intl.NumberFormatOptions): string;
  /** Date and time, or '—' for none; text that is no date comes back as it is. */
  dateTime(iso: string | number | null | undefined): string;
  time(at: number): string;
  /** Milliseconds as "850 ms" or "1.25 s" in the locale's words. */
  duration(ms: number | null): string;
}

function isPlural(m: Message): m is PluralForms {
  return typeof m === 'object';
}

export function createTranslator(locale: Locale): Translator {
  const catalog: Record<string, Message> = CATALOGS[locale];
  const numbers = new Intl.NumberFormat(locale);
  const plurals = new Intl.PluralRules(locale);
  const dates = new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeStyle: 'medium' });
  const times = new Intl.DateTimeFormat(locale, { timeStyle: 'medium' });
  const format = (message: Message, params: Record<string, string | number>): string => {
    let text: string;
    if (isPlural(message)) {
      const count = params.count;
      const category = typeof count === 'number' ? plurals.select(count) : 'other';
      text = (category === 'other' ? undefined : message[category]) ?? message.other;
    } else {
      text = message;
    }
    return text.replace(/\{([A-Za-z][A-Za-z0-9]*)\}/g, (whole, name: string) => {
      const v = params[name];
      if (v === undefined) return whole;
      return typeof v === 'number' ? numbers.format(v) : v;
    });
  };
  const translator: Translator = {
    locale,
    t: (key, ...params) => format(catalog[key], params[0] ?? {}),
    lookup: (key, params = {}) => (Object.hasOwn(catalog, key) ? format(catalog[key], params) : undefined),
    number: (n, options) => (options ? new Intl.NumberFormat(locale, options).format(n) : numbers.format(n)),
    dateTime: (iso) => {
      if (iso === null || iso === undefined || iso === '') return '—';
      const d = new Date(iso);
      return Number.isNaN(d.getTime()) ? String(iso) : dates.format(d);
    },
    time: (at) => times.format(new Date(at)),
    duration: (ms) => {
      if (ms === null) return '—';
      if (ms < 1000) return translator.t('unit.ms', { value: Math.round(ms) });
      const digits = ms < 10_000 ? 2 : 1;
      return translator.t('unit.s', { value: new Intl.NumberFormat(locale, { minimumFractionDigits: digits, maximumFractionDigits: digits }).format(ms / 1000) });
    },
  };
  return translator;
}
