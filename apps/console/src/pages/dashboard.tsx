// Throughput, latency and failures of the last hour, from the query log; dead letters waiting.
import { useEffect } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { listAll } from '../lib/api.js';
import { dashboardStats, formatMs } from '../lib/stats.js';
import { formatRoute } from '../lib/routes.js';
import { Busy, ErrorNote, PageHeader, useLoad } from '../ui.js';

const WINDOW_MINUTES = 60;
const REFRESH_MS = 15_000;
/** The dashboard reads at most this many queries of the window; with more, the figures say so. */
const MAX_QUERIES = 5_000;

export function Dashboard() {
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
      <PageHeader title="Dashboard">
        <button onClick={reload} disabled={load.loading}>Refresh</button>
      </PageHeader>
      <ErrorNote error={load.error} />
      <Busy on={load.loading && !d} />
      {d ? (
        <>
          <div className="cards">
            <Card label="Messages per minute" value={String(lastMinute)} hint={`${d.stats.total} in the last hour${d.capped ? ` (first ${MAX_QUERIES} read)` : ''}`} id="stat-rate" />
            <Card label="p95 end-to-end latency" value={formatMs(d.stats.p95LatencyMs)} hint={`median ${formatMs(d.stats.medianLatencyMs)}, received → finished`} id="stat-p95" />
            <Card label="Errors" value={String(d.stats.failed)} hint={`${d.stats.succeeded} succeeded, ${d.stats.inFlight} in flight`} id="stat-errors" href={formatRoute({ page: 'queries', params: { status: 'failed' } })} tone={d.stats.failed ? 'bad' : undefined} />
            <Card label="Dead letters" value={`${d.deadLetters}${d.moreDead ? '+' : ''}`} hint="waiting for resubmit or discard" id="stat-dead" href={formatRoute({ page: 'dead-letters' })} tone={d.deadLetters ? 'bad' : undefined} />
          </div>
          <h2>Messages per minute, last hour</h2>
          <div className="bars" role="img" aria-label="messages per minute over the last hour">
            {d.stats.perMinute.map((m) => (
              <div key={m.minute} className="bar" style={{ height: `${(m.count / max) * 100}%` }} title={`${new Date(m.minute).toLocaleTimeString()}: ${m.count}`} />
            ))}
          </div>
          <small className="hint">Updated {new Date(d.at).toLocaleTimeString()}; refreshes every {REFRESH_MS / 1000} s.</small>
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
