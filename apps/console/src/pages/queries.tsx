// The query log: filters in the URL (so a filtered view can be shared), newest first, paged; one
// query's timeline and its trace.
import { useEffect, useState, type FormEvent, type ReactNode } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { listAll, request } from '../lib/api.js';
import { formatRoute, type Route } from '../lib/routes.js';
import { queryTimeline, type TimelineStep } from '../lib/stats.js';
import { traceUrl } from '../lib/trace-link.js';
import { Busy, ErrorNote, Field, PageHeader, useLoad } from '../ui.js';
import type { Translator } from '../i18n/i18n.js';
import { Code, richText, useI18n } from '../i18n/react.js';

const FILTERS = ['botId', 'status', 'launcherType', 'launcherId', 'from', 'to'] as const;
const STATUSES = AdminApi.QueryStatus.options;
/** LangBot's kinds of session: a private chat or a group. */
const LAUNCHER_TYPES = ['person', 'group'] as const;

/** A query status in the reader's language; one the console does not know is shown as it is. */
export function statusLabel(i18n: Translator, status: string): string {
  return i18n.lookup(`status.${status}`) ?? status;
}

function stepLabel(i18n: Translator, s: TimelineStep): ReactNode {
  switch (s.step) {
    case 'received': return i18n.t('queries.step.received');
    case 'started': return i18n.t('queries.step.started');
    // The error is the service's own text, shown as it was recorded.
    case 'failed': return s.error ? richText(i18n, 'queries.step.failedWith', { error: <span translate="no">{s.error}</span> }) : i18n.t('queries.step.failed');
    case 'finished': return i18n.t('queries.step.finished', { status: statusLabel(i18n, s.status) });
  }
}
const PAGE = 50;

/** `datetime-local` input text ↔ ISO time. */
function toIso(local: string): string | undefined {
  if (!local) return undefined;
  const d = new Date(local);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}
function toLocal(iso: string | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}

const TRACE_TEMPLATE_KEY = 'conveyor-console-trace-url';

/** The deployment's trace link template, unless this browser set its own. */
export function useTraceTemplate(deployment: string): [string, (t: string) => void] {
  const [own, setOwn] = useState(() => localStorage.getItem(TRACE_TEMPLATE_KEY));
  const set = (t: string) => {
    if (t && t !== deployment) localStorage.setItem(TRACE_TEMPLATE_KEY, t);
    else localStorage.removeItem(TRACE_TEMPLATE_KEY);
    setOwn(t && t !== deployment ? t : null);
  };
  return [own ?? deployment, set];
}

/** `sampled` false: the trace never reached the tracing backend, so a link would open nothing. Unknown (older records, dead letters): linked. */
export function TraceLink({ template, traceId, sampled }: { template: string; traceId: string | null | undefined; sampled?: boolean | null }) {
  const { t } = useI18n();
  if (!traceId) return <span className="muted">—</span>;
  if (sampled === false) return <span className="mono" title={t('queries.notSampledTitle')}><span translate="no">{traceId}</span> <span className="muted trace-unsampled">{t('queries.notSampled')}</span></span>;
  const url = traceUrl(template, traceId);
  return url ? <a className="mono trace" href={url} target="_blank" rel="noreferrer noopener" translate="no">{traceId}</a> : <span className="mono" translate="no">{traceId}</span>;
}

export function Queries({ route, traceUrlTemplate }: { route: Route; traceUrlTemplate: string }) {
  const [template, setTemplate] = useTraceTemplate(traceUrlTemplate);
  if (route.id) return <QueryDetail id={route.id} template={template} />;
  return <QueryList route={route} template={template} setTemplate={setTemplate} />;
}

function QueryList({ route, template, setTemplate }: { route: Route; template: string; setTemplate: (t: string) => void }) {
  const filter = Object.fromEntries(FILTERS.map((k) => [k, route.params[k] || undefined]));
  const key = JSON.stringify(filter);
  const bots = useLoad((signal) => listAll('/bots', AdminApi.Bot, { signal }), []);
  const [items, setItems] = useState<AdminApi.QueryLogEntry[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<unknown>();
  const [loading, setLoading] = useState(false);
  const [draft, setDraft] = useState(filter);
  const [tick, setTick] = useState(0);

  const fetchPage = async (after: string | null, signal?: AbortSignal) => {
    setLoading(true);
    try {
      const page = await request('GET', '/queries', AdminApi.Page(AdminApi.QueryLogEntry), { query: { ...filter, limit: PAGE, cursor: after ?? undefined }, signal });
      setItems((prev) => (after ? [...prev, ...page.items] : page.items));
      setCursor(page.nextCursor);
      setError(undefined);
    } catch (e) {
      if (!signal?.aborted) setError(e);
    } finally {
      if (!signal?.aborted) setLoading(false);
    }
  };
  // Refetched when the filters in the URL change (`key`) or on Refresh (`tick`).
  useEffect(() => {
    setDraft(filter);
    const abort = new AbortController();
    void fetchPage(null, abort.signal);
    return () => abort.abort();
  }, [key, tick]);

  const apply = (e: FormEvent) => {
    e.preventDefault();
    location.hash = formatRoute({ page: 'queries', params: draft });
  };
  const setField = (k: (typeof FILTERS)[number], v: string | undefined) => setDraft({ ...draft, [k]: v || undefined });
  const botName = new Map(bots.data?.items.map((b) => [b.id, b.name]));
  const [templateText, setTemplateText] = useState(template);
  const i18n = useI18n();
  const { t } = i18n;

  return (
    <section>
      <PageHeader title={t('queries.title')}><button onClick={() => setTick((n) => n + 1)} disabled={loading}>{t('common.refresh')}</button></PageHeader>
      <form className="filters" onSubmit={apply} aria-label={t('queries.filters')}>
        <Field label={t('queries.bot')} htmlFor="f-bot">
          <select id="f-bot" value={draft.botId ?? ''} onChange={(e) => setField('botId', e.target.value)}>
            <option value="">{t('common.all')}</option>
            {bots.data?.items.map((b) => <option key={b.id} value={b.id} translate="no">{b.name}</option>)}
          </select>
        </Field>
        <Field label={t('queries.status')} htmlFor="f-status">
          <select id="f-status" value={draft.status ?? ''} onChange={(e) => setField('status', e.target.value)}>
            <option value="">{t('common.all')}</option>
            {STATUSES.map((s) => <option key={s} value={s}>{statusLabel(i18n, s)}</option>)}
          </select>
        </Field>
        <Field label={t('queries.launcherType')} htmlFor="f-lt">
          <select id="f-lt" value={draft.launcherType ?? ''} onChange={(e) => setField('launcherType', e.target.value)}>
            <option value="">{t('common.all')}</option>
            {LAUNCHER_TYPES.map((l) => <option key={l} value={l}>{t(`launcher.${l}`)}</option>)}
            {draft.launcherType && !LAUNCHER_TYPES.some((l) => l === draft.launcherType) ? <option value={draft.launcherType} translate="no">{draft.launcherType}</option> : null}
          </select>
        </Field>
        <Field label={t('queries.launcherId')} htmlFor="f-lid"><input id="f-lid" value={draft.launcherId ?? ''} onChange={(e) => setField('launcherId', e.target.value)} /></Field>
        <Field label={t('queries.from')} htmlFor="f-from"><input id="f-from" type="datetime-local" value={toLocal(draft.from)} onChange={(e) => setField('from', toIso(e.target.value))} /></Field>
        <Field label={t('queries.to')} htmlFor="f-to"><input id="f-to" type="datetime-local" value={toLocal(draft.to)} onChange={(e) => setField('to', toIso(e.target.value))} /></Field>
        <div className="buttons">
          <button type="submit">{t('queries.apply')}</button>
          <a href={formatRoute({ page: 'queries' })}>{t('queries.clear')}</a>
        </div>
      </form>
      <ErrorNote error={error} />
      <table className="queries">
        <thead><tr><th>{t('queries.received')}</th><th>{t('queries.bot')}</th><th>{t('queries.session')}</th><th>{t('queries.status')}</th><th>{t('queries.latency')}</th><th>{t('queries.trace')}</th><th>{t('queries.error')}</th></tr></thead>
        <tbody>
          {items.map((q) => (
            <tr key={q.id} data-id={q.id} className={q.status === 'failed' ? 'failed' : undefined}>
              <td><a href={formatRoute({ page: 'queries', id: q.id })}>{i18n.dateTime(q.receivedAt)}</a></td>
              <td translate="no">{botName.get(q.botId) ?? q.botId}</td>
              <td className="mono" translate="no">{q.launcherType}:{q.launcherId}</td>
              <td>{statusLabel(i18n, q.status)}{q.mergedInto ? t('queries.merged') : ''}</td>
              <td>{q.finishedAt ? i18n.duration(Date.parse(q.finishedAt) - Date.parse(q.receivedAt)) : '—'}</td>
              <td><TraceLink template={template} traceId={q.traceId} sampled={q.traceSampled} /></td>
              <td className="error-text" translate="no">{q.error ?? ''}</td>
            </tr>
          ))}
          {!loading && items.length === 0 ? <tr><td colSpan={7} className="empty">{t('queries.empty')}</td></tr> : null}
        </tbody>
      </table>
      <Busy on={loading} />
      {cursor && !loading ? <button onClick={() => void fetchPage(cursor)}>{t('queries.loadMore')}</button> : null}
      <details className="settings">
        <summary>{t('queries.traceLinks')}</summary>
        <form onSubmit={(e) => { e.preventDefault(); setTemplate(templateText.trim()); }}>
          <Field label={t('queries.traceTemplate')} htmlFor="trace-template" hint={richText(i18n, 'queries.traceTemplateHint', { placeholder: <Code>{'{traceId}'}</Code>, example: <Code>http://localhost:16686/trace/{'{traceId}'}</Code> })}>
            <input id="trace-template" className="mono" value={templateText} onChange={(e) => setTemplateText(e.target.value)} />
          </Field>
          <button type="submit">{t('queries.use')}</button>
        </form>
      </details>
    </section>
  );
}

function QueryDetail({ id, template }: { id: string; template: string }) {
  const one = useLoad(async (signal) => {
    const [entry, stages] = await Promise.all([
      request('GET', `/queries/${encodeURIComponent(id)}`, AdminApi.QueryLogEntry, { signal }),
      request('GET', `/queries/${encodeURIComponent(id)}/timeline`, AdminApi.QueryTimeline, { signal }),
    ]);
    return { ...entry, stages };
  }, [id]);
  const q = one.data;
  const i18n = useI18n();
  const { t } = i18n;
  return (
    <section>
      <PageHeader title={t('queries.detailTitle', { id })}>
        <button onClick={one.reload} disabled={one.loading}>{t('common.refresh')}</button>
        <a href={formatRoute({ page: 'queries' })}>{t('queries.all')}</a>
      </PageHeader>
      <ErrorNote error={one.error} />
      <Busy on={one.loading && !q} />
      {q ? (
        <>
          <dl className="facts">
            <dt>{t('queries.status')}</dt><dd id="query-status" data-status={q.status}>{statusLabel(i18n, q.status)}</dd>
            <dt>{t('queries.bot')}</dt><dd translate="no"><a href={formatRoute({ page: 'bots', id: q.botId })}>{q.botId}</a></dd>
            <dt>{t('queries.pipeline')}</dt><dd translate="no">{q.pipelineId ? <a href={formatRoute({ page: 'pipelines', id: q.pipelineId })}>{q.pipelineId}</a> : '—'}</dd>
            <dt>{t('queries.session')}</dt><dd className="mono" translate="no">{q.launcherType}:{q.launcherId}</dd>
            <dt>{t('queries.attempts')}</dt><dd>{q.attempt}</dd>
            {q.mergedInto ? <><dt>{t('queries.mergedInto')}</dt><dd translate="no"><a href={formatRoute({ page: 'queries', id: q.mergedInto })}>{q.mergedInto}</a></dd></> : null}
            <dt>{t('queries.trace')}</dt><dd id="query-trace"><TraceLink template={template} traceId={q.traceId} sampled={q.traceSampled} /></dd>
            <dt>{t('queries.model')}</dt><dd id="query-model" translate="no">{q.model ? `${q.model} (${q.runner ?? ''})` : q.runner ?? '—'}</dd>
            <dt>{t('queries.usage')}</dt><dd id="query-usage">{q.modelCalls !== null ? t('queries.usageText', { calls: q.modelCalls, input: q.inputTokens ?? 0, output: q.outputTokens ?? 0 }) : '—'}</dd>
            <dt>{t('queries.cost')}</dt><dd id="query-cost">{q.cost !== null ? i18n.number(q.cost, { maximumFractionDigits: 6 }) : '—'}</dd>
          </dl>
          <h2>{t('queries.timeline')}</h2>
          <ol className="timeline">
            {queryTimeline(q).map((s) => (
              <li key={s.step} className={s.step === 'failed' ? 'failed' : undefined}>
                <span className="offset">+{i18n.duration(s.offsetMs)}</span> {stepLabel(i18n, s)} <small className="muted">{i18n.dateTime(s.at)}</small>
              </li>
            ))}
            {!q.finishedAt ? <li className="muted">{t('queries.notFinished')}</li> : null}
          </ol>
          <h2>{t('queries.stages')}</h2>
          {q.stages.steps.length ? (
            <ol className="stages" id="query-stages">
              {q.stages.steps.map((step, i) => {
                // The delivery may end after the query is recorded finished: the scale holds every step.
                const total = Math.max(1, q.stages.totalMs ?? 0, ...q.stages.steps.map((x) => x.offsetMs + x.ms));
                return (
                  <li key={`${step.stage}-${i}`} data-stage={step.stage}>
                    <span className="stage-name" translate="no">{step.stage === 'queued' ? t('queries.queued') : step.stage}</span>{' '}
                    <span className="offset">+{i18n.duration(step.offsetMs)}</span>{' '}
                    <span className="stage-ms">{i18n.duration(step.ms)}</span>
                    <span className="stage-bar" style={{ marginLeft: `${Math.max(0, (step.offsetMs / total) * 100)}%`, width: `${Math.max(0.5, (step.ms / total) * 100)}%` }} />
                  </li>
                );
              })}
            </ol>
          ) : <p className="muted">{t('queries.noStages')}</p>}
          <p className="hint">{t('queries.spansHint')}</p>
        </>
      ) : null}
    </section>
  );
}
