// Messages, model calls, tokens, cost and latency of a range, per bot, pipeline and model, computed by
// the admin service (GET /monitoring/summary); dead letters waiting; the range's query log as CSV.
import { useEffect, useState } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { apiUrl, listAll, request } from '../lib/api.js';
import { formatRoute } from '../lib/routes.js';
import { Busy, ErrorNote, Field, PageHeader, useLoad } from '../ui.js';
import { useI18n } from '../i18n/react.js';
import type { Translator } from '../i18n/i18n.js';

const REFRESH_MS = 15_000;
const RANGES = ['1h', '24h', '7d', '30d', 'custom'] as const;
type RangeName = (typeof RANGES)[number];

/** The range and filters the monitoring routes take, as query parameters. */
export interface RangeQuery {
  range: RangeName;
  from?: string;
  to?: string;
  botId?: string;
  pipelineId?: string;
  model?: string;
}

/** `<input type="datetime-local">` values are local times; the API takes ISO instants. */
function isoOf(local: string): string | undefined {
  const t = Date.parse(local);
  return Number.isNaN(t) ? undefined : new Date(t).toISOString();
}

function localOf(ms: number): string {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
}

/** The range picker shared by the monitoring pages: a named range, or custom from/to. */
export function RangePicker({ value, onChange, idPrefix }: { value: RangeQuery; onChange: (next: RangeQuery) => void; idPrefix: string }) {
  const { t } = useI18n();
  const [from, setFrom] = useState(() => localOf(Date.now() - 86_400_000));
  const [to, setTo] = useState(() => localOf(Date.now()));
  const custom = (f: string, tt: string) => onChange({ ...value, range: 'custom', from: isoOf(f), to: isoOf(tt) });
  return (
    <div className="filters">
      <Field label={t('monitoring.range')} htmlFor={`${idPrefix}-range`}>
        <select id={`${idPrefix}-range`} value={value.range} onChange={(e) => {
          const range = RANGES.find((r) => r === e.target.value) ?? '24h';
          if (range === 'custom') custom(from, to);
          else onChange({ ...value, range, from: undefined, to: undefined });
        }}>
          {RANGES.map((r) => <option key={r} value={r}>{t(`monitoring.range.${r}`)}</option>)}
        </select>
      </Field>
      {value.range === 'custom' ? (
        <>
          <Field label={t('monitoring.from')} htmlFor={`${idPrefix}-from`}>
            <input id={`${idPrefix}-from`} type="datetime-local" value={from} onChange={(e) => { setFrom(e.target.value); custom(e.target.value, to); }} />
          </Field>
          <Field label={t('monitoring.to')} htmlFor={`${idPrefix}-to`}>
            <input id={`${idPrefix}-to`} type="datetime-local" value={to} onChange={(e) => { setTo(e.target.value); custom(from, e.target.value); }} />
          </Field>
        </>
      ) : null}
    </div>
  );
}

/** What a group's cost reads as: a sum of money without a currency (the operator's prices have none), or a dash. */
export function costText(i18n: Pick<Translator, 'number'>, cost: number | null): string {
  return cost === null ? '—' : i18n.number(cost, { maximumFractionDigits: 4 });
}

export function Dashboard() {
  const i18n = useI18n();
  const { t, duration, time, dateTime, number } = i18n;
  const [query, setQuery] = useState<RangeQuery>({ range: '1h' });
  const load = useLoad(async (signal) => {
    const [summary, dead] = await Promise.all([
      request('GET', '/monitoring/summary', AdminApi.MonitoringSummary, { query: { ...query }, signal }),
      listAll('/dead-letters', AdminApi.DeadLetterEntry, { maxItems: 200, signal }),
    ]);
    return { summary, deadLetters: dead.items.length, moreDead: dead.more, at: Date.now() };
  }, [query.range, query.from, query.to, query.botId, query.pipelineId, query.model]);
  const { reload } = load;
  useEffect(() => {
    const timer = setInterval(reload, REFRESH_MS);
    return () => clearInterval(timer);
  }, [reload]);

  const d = load.data;
  const s = d?.summary;
  const max = s ? Math.max(1, ...s.series.map((b) => b.messages)) : 1;
  const short = s ? s.bucketSeconds < 86_400 : true;
  const filter = (key: 'botId' | 'pipelineId' | 'model', options: AdminApi.MonitoringSummary['byBot'], label: string) => (
    <Field label={label} htmlFor={`dash-${key}`}>
      <select id={`dash-${key}`} value={query[key] ?? ''} onChange={(e) => setQuery({ ...query, [key]: e.target.value || undefined })}>
        <option value="">{t('monitoring.all')}</option>
        {[...new Set([...(query[key] ? [query[key]] : []), ...options.map((o) => o.key).filter(Boolean)])].map((k) => <option key={k} value={k} translate="no">{k}</option>)}
      </select>
    </Field>
  );
  return (
    <section>
      <PageHeader title={t('dashboard.title')}>
        <button onClick={reload} disabled={load.loading}>{t('common.refresh')}</button>
        <a id="dash-export" className="button" href={apiUrl('/monitoring/queries.csv', { ...query })} download>{t('monitoring.exportCsv')}</a>
      </PageHeader>
      <RangePicker value={query} onChange={setQuery} idPrefix="dash" />
      {s ? (
        <div className="filters">
          {filter('botId', s.byBot, t('monitoring.bot'))}
          {filter('pipelineId', s.byPipeline, t('monitoring.pipeline'))}
          {filter('model', s.byModel, t('monitoring.model'))}
        </div>
      ) : null}
      <ErrorNote error={load.error} />
      <Busy on={load.loading && !d} />
      {d && s ? (
        <>
          <div className="cards">
            <Card label={t('dashboard.messages')} value={number(s.totals.messages)} hint={t('dashboard.messagesHint', { from: dateTime(s.from), to: dateTime(s.to) })} id="stat-rate" />
            <Card label={t('dashboard.p95')} value={duration(s.totals.p95Ms)} hint={t('dashboard.p95Hint', { median: duration(s.totals.p50Ms) })} id="stat-p95" />
            <Card label={t('dashboard.errors')} value={number(s.totals.failed)} hint={t('dashboard.errorsHint', { succeeded: s.totals.succeeded, inFlight: s.totals.messages - s.totals.succeeded - s.totals.failed })} id="stat-errors" href={formatRoute({ page: 'errors', params: { range: query.range === 'custom' ? undefined : query.range } })} tone={s.totals.failed ? 'bad' : undefined} />
            <Card label={t('dashboard.tokens')} value={number(s.totals.inputTokens + s.totals.outputTokens)} hint={t('dashboard.tokensHint', { calls: s.totals.modelCalls, input: s.totals.inputTokens, output: s.totals.outputTokens })} id="stat-tokens" />
            <Card label={t('dashboard.cost')} value={costText(i18n, s.totals.cost)} hint={t('dashboard.costHint')} id="stat-cost" />
            <Card label={t('dashboard.dead')} value={`${d.deadLetters}${d.moreDead ? '+' : ''}`} hint={t('dashboard.deadHint')} id="stat-dead" href={formatRoute({ page: 'dead-letters' })} tone={d.deadLetters ? 'bad' : undefined} />
          </div>
          <h2>{t('dashboard.seriesTitle')}</h2>
          <div className="bars" role="img" aria-label={t('dashboard.seriesLabel')}>
            {s.series.map((b) => (
              <div key={b.start} className={`bar${b.failed ? ' has-failed' : ''}`} style={{ height: `${(b.messages / max) * 100}%` }} title={t('dashboard.bucketTitle', { time: short ? time(Date.parse(b.start)) : dateTime(b.start), count: b.messages, failed: b.failed })} />
            ))}
          </div>
          <Breakdown id="by-bot" title={t('dashboard.byBot')} rows={s.byBot} />
          <Breakdown id="by-pipeline" title={t('dashboard.byPipeline')} rows={s.byPipeline} />
          <Breakdown id="by-model" title={t('dashboard.byModel')} rows={s.byModel} />
          <small className="hint">{t('dashboard.updated', { time: time(d.at), seconds: REFRESH_MS / 1000 })}</small>
        </>
      ) : null}
    </section>
  );
}

function Breakdown({ id, title, rows }: { id: string; title: string; rows: AdminApi.MonitoringSummary['byBot'] }) {
  const i18n = useI18n();
  const { t, number, duration } = i18n;
  return (
    <>
      <h2>{title}</h2>
      <table id={id}>
        <thead><tr><th>{t('dashboard.col.key')}</th><th>{t('dashboard.col.messages')}</th><th>{t('dashboard.col.failed')}</th><th>{t('dashboard.col.calls')}</th><th>{t('dashboard.col.input')}</th><th>{t('dashboard.col.output')}</th><th>{t('dashboard.col.cost')}</th><th>{t('dashboard.col.p95')}</th></tr></thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.key} data-key={r.key}>
              <td translate="no">{r.key || '—'}</td>
              <td className="num">{number(r.messages)}</td>
              <td className="num">{number(r.failed)}</td>
              <td className="num">{number(r.modelCalls)}</td>
              <td className="num">{number(r.inputTokens)}</td>
              <td className="num">{number(r.outputTokens)}</td>
              <td className="num">{costText(i18n, r.cost)}</td>
              <td className="num">{duration(r.p95Ms)}</td>
            </tr>
          ))}
          {rows.length === 0 ? <tr><td colSpan={8} className="empty">{t('dashboard.none')}</td></tr> : null}
        </tbody>
      </table>
    </>
  );
}

function Card({ label, value, hint, id, href, tone }: { label: string; value: string; hint: string; id: string; href?: string; tone?: 'bad' }) {
  const body = (
    <>
      <div className="card-label">{label}</div>
      <div className="card-value" id={id}>{value}</div>
      <div className="card-hint">{hint}</div>
    </>
  );
  return href ? <a className={`card ${tone ?? ''}`} href={href}>{body}</a> : <div className={`card ${tone ?? ''}`}>{body}</div>;
}
