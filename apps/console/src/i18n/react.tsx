// The chosen language for the whole console: a context every component reads its words from, the
// switcher (in the sidebar and on the sign-in page), and <html lang> and the title kept in step.
import { Fragment, createContext, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { z } from 'zod';
import zodEnglish from 'zod/v4/locales/en.js';
import zodJapanese from 'zod/v4/locales/ja.js';
import zodKorean from 'zod/v4/locales/ko.js';
import zodRussian from 'zod/v4/locales/ru.js';
import zodVietnamese from 'zod/v4/locales/vi.js';
import zodChinese from 'zod/v4/locales/zh-CN.js';
import zodTraditionalChinese from 'zod/v4/locales/zh-TW.js';
import { LOCALE_NAMES, LOCALE_STORAGE_KEY, LOCALES, createTranslator, detectLocale, isLocale, type Locale, type MessageKey, type Params, type Translator } from './i18n.js';

interface I18nState extends Translator {
  setLocale: (next: Locale) => void;
}

function storedLocale(): string | null {
  try {
    return localStorage.getItem(LOCALE_STORAGE_KEY);
  } catch {
    // Storage refused (a privacy mode): the browser's languages decide.
    return null;
  }
}

/** The language the console starts in (see detectLocale for the order). */
export function initialLocale(): Locale {
  return detectLocale(storedLocale(), navigator.languages ?? [navigator.language]);
}

/** zod's own wording of its issues (the browser's check of a pipeline config), per language. */
const ZOD_LOCALES: Record<Locale, () => Parameters<typeof z.config>[0]> = {
  en: zodEnglish, 'zh-Hans': zodChinese, 'zh-Hant': zodTraditionalChinese, ja: zodJapanese, ko: zodKorean, ru: zodRussian, vi: zodVietnamese,
};

const I18nContext = createContext<I18nState | null>(null);

export function I18nProvider({ children }: { children: ReactNode }) {
  const [locale, setLocaleState] = useState<Locale>(initialLocale);
  const state = useMemo<I18nState>(() => {
    // Set before the pages render, so the issues they compute are worded in the new language.
    z.config(ZOD_LOCALES[locale]());
    const setLocale = (next: Locale) => {
      try {
        localStorage.setItem(LOCALE_STORAGE_KEY, next);
      } catch {
        // Not stored: the choice lasts for this page only.
      }
      setLocaleState(next);
    };
    return { ...createTranslator(locale), setLocale };
  }, [locale]);
  useEffect(() => {
    document.documentElement.lang = locale;
    document.title = state.t('app.title');
  }, [locale, state]);
  return <I18nContext.Provider value={state}>{children}</I18nContext.Provider>;
}

/** The current language's words and formats. */
export function useI18n(): I18nState {
  const state = useContext(I18nContext);
  if (!state) throw new Error('useI18n outside I18nProvider');
  return state;
}

/** Each language named in itself, so a reader finds theirs whatever is shown now. */
export function LanguageSwitch() {
  const { locale, setLocale, t } = useI18n();
  return (
    <select id="language" className="language" aria-label={t('app.language')} value={locale} onChange={(e) => { if (isLocale(e.target.value)) setLocale(e.target.value); }}>
      {LOCALES.map((l) => <option key={l} value={l} lang={l} translate="no">{LOCALE_NAMES[l]}</option>)}
    </select>
  );
}

/**
 * A message with elements in its placeholders (code, a link), where the language decides the word
 * order: `{example}` in "e.g. {example}" becomes the element given for `example`.
 */
export function richText<K extends MessageKey>(i18n: Translator, key: K, nodes: Record<keyof Params<K>, ReactNode>): ReactNode {
  const text = i18n.lookup(key) ?? key;
  const byName: Record<string, ReactNode> = nodes;
  return text.split(/(\{[A-Za-z][A-Za-z0-9]*\})/).map((part, i) => {
    const name = /^\{([A-Za-z][A-Za-z0-9]*)\}$/.exec(part)?.[1];
    return <Fragment key={i}>{name !== undefined && name in byName ? byName[name] : part}</Fragment>;
  });
}

/** An identifier inside a sentence: code type, never translated. */
export function Code({ children }: { children: ReactNode }) {
  return <code translate="no">{children}</code>;
}
