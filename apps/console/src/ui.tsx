// Small building blocks every page uses: loading state, error notes, fields, JSON input.
import { useCallback, useEffect, useRef, useState, type ReactNode } from 'react';
import { describeError } from './lib/api.js';
import type { Translator } from './i18n/i18n.js';
import { useI18n } from './i18n/react.js';
import { isRecord } from './lib/schema-form.js';

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/**
 * Runs `load` now and whenever `deps` change (the latest `load` is used; it is not a dependency itself);
 * a newer run wins over an older one still in flight.
 */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: readonly unknown[]): Loaded<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<unknown>();
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => {
    const abort = new AbortController();
    setLoading(true);
    loadRef.current(abort.signal).then(
      (d) => { if (!abort.signal.aborted) { setData(d); setError(undefined); setLoading(false); } },
      (e: unknown) => { if (!abort.signal.aborted) { setError(e); setLoading(false); } },
    );
    return () => abort.abort();
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, loading, reload };
}

/** An action button's state: busy while it runs, its error or success note afterwards. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState<string>();
  const run = useCallback(async (fn: () => Promise<string | void>) => {
    setBusy(true);
    setError(undefined);
    setDone(undefined);
    try {
      const note = await fn();
      if (note) setDone(note);
      return true;
    } catch (e) {
      setError(e);
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, done, run, clear: () => { setError(undefined); setDone(undefined); } };
}

export function ErrorNote({ error }: { error: unknown }) {
  const i18n = useI18n();
  if (error === undefined || error === null) return null;
  return <div className="note error" role="alert">{describeError(error, i18n)}</div>;
}

export function DoneNote({ text }: { text?: string }) {
  return text ? <div className="note ok" role="status">{text}</div> : null;
}

export function Busy({ on, label }: { on: boolean; label?: string }) {
  const { t } = useI18n();
  return on ? <div className="busy" aria-busy="true">{label ?? t('common.loading')}</div> : null;
}

export function Field({ label, hint, children, htmlFor }: { label: string; hint?: ReactNode; children: ReactNode; htmlFor?: string }) {
  return (
    <div className="field">
      <label htmlFor={htmlFor}>{label}</label>
      {children}
      {hint ? <small className="hint">{hint}</small> : null}
    </div>
  );
}

/** Parses a JSON object typed into a textarea; the error names the field (already in the reader's language). */
export function parseJsonObject(text: string, field: string, { t }: Pick<Translator, 't'>): Record<string, unknown> {
  let v: unknown;
  try {
    v = text.trim() ? JSON.parse(text) : {};
  } catch (e) {
    throw new Error(t('errors.notJson', { field, detail: e instanceof Error ? e.message : String(e) }));
  }
  if (!isRecord(v)) throw new Error(t('errors.notObject', { field }));
  return v;
}

export function PageHeader({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <header className="page-header">
      <h1>{title}</h1>
      <div className="actions">{children}</div>
    </header>
  );
}
