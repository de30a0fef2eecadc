// The chosen language for the whole console: a context every component reads its words from, the
// switcher (in the sidebar and on the sign-in page), and <html lang> and the title kept in step.
import { createContext, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { LOCALE_NAMES, LOCALE_STORAGE_KEY, LOCALES, createTranslator, detectLocale, isLocale, type Locale, type Translator } from './i18n.js';

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

const I18nContext = createContext<I18nState | null>(null);

export function I18nProvider({ children }: { children: ReactNode }) {
  const [locale, setLocaleState] = useState<Locale>(initialLocale);
  const state = useMemo<I18nState>(() => ({
    ...createTranslator(locale),
    setLocale: (next) => {
      try {
        localStorage.setItem(LOCALE_STORAGE_KEY, next);
      } catch {
        // Not stored: the choice lasts for this page only.
      }
      setLocaleState(next);
    },
  }), [locale]);
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
