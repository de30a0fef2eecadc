// Throughput, latency and failures of the last hour, from the query log; dead letters waiting.
import { useEffect } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { listAll } from '../lib/api.js';
import { dashboardStats } from '../lib/stats.js';
import { formatRoute } from '../lib/routes.js';
import { Busy, ErrorNote, PageHeader, useLoad } from '../ui.js';
import { useI18n } from '../i18n/react.js';

const WINDOW_MINUTES = 60;
const REFRESH_MS = 15_000;
/** The dashboard reads at most this many queries of the window; with more, the figures say so. */
const MAX_QUERIES = 5_000;

export function Dashboard() {
  const { t, duration, time } = useI18n();
  const load = useLoad(async (signal) => {
    const now = Date.now();
    const from = new Date(now - WINDOW_MINUTES * 60_000).toISOString();
    const [queries, dead] = await Promise.all([
      listAll('/queries', AdminApi.QueryLogEntry, { query: { from }, maxItems: MAX_QUERIES, signal }),
      listAll('/dead-letters', AdminApi.DeadLetterEntry, { maxItems: 200, signal }),
    ]);
    return { stats: dashboardStats(queries.items, now, WINDOW_MINUTES), capped: queries.more, deadLetters: dead.items.length, moreDead: dead.more, at: now };
  }, []);
  const { reload } = load;
  useEffect(() => {
    const t = setInterval(reload, REFRESH_MS);
    return () => clearInterval(t);
  }, [reload]);

  const d = load.data;
  const max = d ? Math.max(1, ...d.stats.perMinute.map((m) => m.count)) : 1;
  const lastMinute = d?.stats.perMinute.at(-2)?.count ?? 0;
  return (
    <section>
      <PageHeader title={t('dashboard.title')}>
        <button onClick={reload} disabled={load.loading}>{t('common.refresh')}</button>
      </PageHeader>
      <ErrorNote error={load.error} />
      <Busy on={load.loading && !d} />
      {d ? (
        <>
          <div className="cards">
            <Card label={t('dashboard.rate')} value={String(lastMinute)} hint={d.capped ? t('dashboard.rateHintCapped', { total: d.stats.total, max: MAX_QUERIES }) : t('dashboard.rateHint', { total: d.stats.total })} id="stat-rate" />
            <Card label={t('dashboard.p95')} value={duration(d.stats.p95LatencyMs)} hint={t('dashboard.p95Hint', { median: duration(d.stats.medianLatencyMs) })} id="stat-p95" />
            <Card label={t('dashboard.errors')} value={String(d.stats.failed)} hint={t('dashboard.errorsHint', { succeeded: d.stats.succeeded, inFlight: d.stats.inFlight })} id="stat-errors" href={formatRoute({ page: 'queries', params: { status: 'failed' } })} tone={d.stats.failed ? 'bad' : undefined} />
            <Card label={t('dashboard.dead')} value={`${d.deadLetters}${d.moreDead ? '+' : ''}`} hint={t('dashboard.deadHint')} id="stat-dead" href={formatRoute({ page: 'dead-letters' })} tone={d.deadLetters ? 'bad' : undefined} />
          </div>
          <h2>{t('dashboard.chartTitle')}</h2>
          <div className="bars" role="img" aria-label={t('dashboard.chartLabel')}>
            {d.stats.perMinute.map((m) => (
              <div key={m.minute} className="bar" style={{ height: `${(m.count / max) * 100}%` }} title={t('dashboard.barTitle', { time: time(m.minute), count: m.count })} />
            ))}
          </div>
          <small className="hint">{t('dashboard.updated', { time: time(d.at), seconds: REFRESH_MS / 1000 })}</small>
        </>
      ) : null}
    </section>
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
