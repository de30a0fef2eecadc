// The query log: filters in the URL (so a filtered view can be shared), newest first, paged; one
// query's timeline and its trace.
import { useEffect, useState, type FormEvent } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { listAll, request } from '../lib/api.js';
import { formatRoute, type Route } from '../lib/routes.js';
import { formatMs, queryTimeline } from '../lib/stats.js';
import { traceUrl } from '../lib/trace-link.js';
import { Busy, ErrorNote, Field, PageHeader, fmtTime, useLoad } from '../ui.js';

const FILTERS = ['botId', 'status', 'launcherType', 'launcherId', 'from', 'to'] as const;
const STATUSES = AdminApi.QueryStatus.options;
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
  if (!traceId) return <span className="muted">—</span>;
  if (sampled === false) return <span className="mono" title="This query's trace was not sampled: the tracing backend does not have it">{traceId} <span className="muted trace-unsampled">(not sampled)</span></span>;
  const url = traceUrl(template, traceId);
  return url ? <a className="mono trace" href={url} target="_blank" rel="noreferrer noopener">{traceId}</a> : <span className="mono">{traceId}</span>;
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

  return (
    <section>
      <PageHeader title="Query log"><button onClick={() => setTick((t) => t + 1)} disabled={loading}>Refresh</button></PageHeader>
      <form className="filters" onSubmit={apply} aria-label="filters">
        <Field label="Bot" htmlFor="f-bot">
          <select id="f-bot" value={draft.botId ?? ''} onChange={(e) => setField('botId', e.target.value)}>
            <option value="">all</option>
            {bots.data?.items.map((b) => <option key={b.id} value={b.id}>{b.name}</option>)}
          </select>
        </Field>
        <Field label="Status" htmlFor="f-status">
          <select id="f-status" value={draft.status ?? ''} onChange={(e) => setField('status', e.target.value)}>
            <option value="">all</option>
            {STATUSES.map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </Field>
        <Field label="Launcher type" htmlFor="f-lt"><input id="f-lt" placeholder="person or group" value={draft.launcherType ?? ''} onChange={(e) => setField('launcherType', e.target.value)} /></Field>
        <Field label="Launcher id" htmlFor="f-lid"><input id="f-lid" value={draft.launcherId ?? ''} onChange={(e) => setField('launcherId', e.target.value)} /></Field>
        <Field label="From" htmlFor="f-from"><input id="f-from" type="datetime-local" value={toLocal(draft.from)} onChange={(e) => setField('from', toIso(e.target.value))} /></Field>
        <Field label="To" htmlFor="f-to"><input id="f-to" type="datetime-local" value={toLocal(draft.to)} onChange={(e) => setField('to', toIso(e.target.value))} /></Field>
        <div className="buttons">
          <button type="submit">Apply</button>
          <a href={formatRoute({ page: 'queries' })}>Clear</a>
        </div>
      </form>
      <ErrorNote error={error} />
      <table className="queries">
        <thead><tr><th>Received</th><th>Bot</th><th>Session</th><th>Status</th><th>Latency</th><th>Trace</th><th>Error</th></tr></thead>
        <tbody>
          {items.map((q) => (
            <tr key={q.id} data-id={q.id} className={q.status === 'failed' ? 'failed' : undefined}>
              <td><a href={formatRoute({ page: 'queries', id: q.id })}>{fmtTime(q.receivedAt)}</a></td>
              <td>{botName.get(q.botId) ?? q.botId}</td>
              <td className="mono">{q.launcherType}:{q.launcherId}</td>
              <td>{q.status}{q.mergedInto ? ' (merged)' : ''}</td>
              <td>{q.finishedAt ? formatMs(Date.parse(q.finishedAt) - Date.parse(q.receivedAt)) : '—'}</td>
              <td><TraceLink template={template} traceId={q.traceId} sampled={q.traceSampled} /></td>
              <td className="error-text">{q.error ?? ''}</td>
            </tr>
          ))}
          {!loading && items.length === 0 ? <tr><td colSpan={7} className="empty">No queries match.</td></tr> : null}
        </tbody>
      </table>
      <Busy on={loading} />
      {cursor && !loading ? <button onClick={() => void fetchPage(cursor)}>Load more</button> : null}
      <details className="settings">
        <summary>Trace links</summary>
        <form onSubmit={(e) => { e.preventDefault(); setTemplate(templateText.trim()); }}>
          <Field label="Trace URL template (this browser)" htmlFor="trace-template" hint="{traceId} is replaced, e.g. Jaeger: http://localhost:16686/trace/{traceId}">
            <input id="trace-template" className="mono" value={templateText} onChange={(e) => setTemplateText(e.target.value)} />
          </Field>
          <button type="submit">Use</button>
        </form>
      </details>
    </section>
  );
}

function QueryDetail({ id, template }: { id: string; template: string }) {
  const one = useLoad((signal) => request('GET', `/queries/${encodeURIComponent(id)}`, AdminApi.QueryLogEntry, { signal }), [id]);
  const q = one.data;
  return (
    <section>
      <PageHeader title={`Query ${id}`}>
        <button onClick={one.reload} disabled={one.loading}>Refresh</button>
        <a href={formatRoute({ page: 'queries' })}>All queries</a>
      </PageHeader>
      <ErrorNote error={one.error} />
      <Busy on={one.loading && !q} />
      {q ? (
        <>
          <dl className="facts">
            <dt>Status</dt><dd id="query-status">{q.status}</dd>
            <dt>Bot</dt><dd><a href={formatRoute({ page: 'bots', id: q.botId })}>{q.botId}</a></dd>
            <dt>Pipeline</dt><dd>{q.pipelineId ? <a href={formatRoute({ page: 'pipelines', id: q.pipelineId })}>{q.pipelineId}</a> : '—'}</dd>
            <dt>Session</dt><dd className="mono">{q.launcherType}:{q.launcherId}</dd>
            <dt>Attempts</dt><dd>{q.attempt}</dd>
            {q.mergedInto ? <><dt>Merged into</dt><dd><a href={formatRoute({ page: 'queries', id: q.mergedInto })}>{q.mergedInto}</a></dd></> : null}
            <dt>Trace</dt><dd id="query-trace"><TraceLink template={template} traceId={q.traceId} sampled={q.traceSampled} /></dd>
          </dl>
          <h2>Timeline</h2>
          <ol className="timeline">
            {queryTimeline(q).map((s) => (
              <li key={s.label} className={s.label.startsWith('failed') ? 'failed' : undefined}>
                <span className="offset">+{formatMs(s.offsetMs)}</span> {s.label} <small className="muted">{fmtTime(s.at)}</small>
              </li>
            ))}
            {!q.finishedAt ? <li className="muted">not finished yet</li> : null}
          </ol>
          <p className="hint">Every stage, bus hop, model call and tool call of this query is a span in its trace.</p>
        </>
      ) : null}
    </section>
  );
}
