// The error log: the range's failed queries with their reasons, newest first (GET /monitoring/errors).
import { useEffect, useState } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { request } from '../lib/api.js';
import { formatRoute, type Route } from '../lib/routes.js';
import { Busy, ErrorNote, PageHeader } from '../ui.js';
import { useI18n } from '../i18n/react.js';
import { RangePicker, type RangeQuery } from './dashboard.js';

const NAMED = ['1h', '24h', '7d', '30d'] as const;

export function Errors({ route }: { route: Route }) {
  const { t, dateTime } = useI18n();
  const [query, setQuery] = useState<RangeQuery>({ range: NAMED.find((r) => r === route.params.range) ?? '24h' });
  const [items, setItems] = useState<AdminApi.QueryLogEntry[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<unknown>();
  const fetchPage = async (after?: string) => {
    setLoading(true);
    setError(undefined);
    try {
      const page = await request('GET', '/monitoring/errors', AdminApi.Page(AdminApi.QueryLogEntry), { query: { ...query, cursor: after } });
      setItems((old) => (after ? [...old, ...page.items] : page.items));
      setCursor(page.nextCursor);
    } catch (err) {
      setError(err);
    } finally {
      setLoading(false);
    }
  };
  useEffect(() => void fetchPage(), [query.range, query.from, query.to]);
  return (
    <section>
      <PageHeader title={t('errors.title')}>
        <button onClick={() => void fetchPage()} disabled={loading}>{t('common.refresh')}</button>
      </PageHeader>
      <RangePicker value={query} onChange={setQuery} idPrefix="errors" />
      <ErrorNote error={error} />
      <table id="error-log">
        <thead><tr><th>{t('errors.received')}</th><th>{t('errors.bot')}</th><th>{t('errors.pipeline')}</th><th>{t('errors.model')}</th><th>{t('errors.reason')}</th></tr></thead>
        <tbody>
          {items.map((q) => (
            <tr key={q.id} data-id={q.id} className="failed">
              <td><a href={formatRoute({ page: 'queries', id: q.id })}>{dateTime(q.receivedAt)}</a></td>
              <td translate="no">{q.botId}</td>
              <td translate="no">{q.pipelineId ?? '—'}</td>
              <td translate="no">{q.model ?? '—'}</td>
              <td className="error-text" translate="no">{q.error ?? ''}</td>
            </tr>
          ))}
          {!loading && items.length === 0 ? <tr><td colSpan={5} className="empty">{t('errors.empty')}</td></tr> : null}
        </tbody>
      </table>
      <Busy on={loading} />
      {cursor && !loading ? <button onClick={() => void fetchPage(cursor)}>{t('errors.loadMore')}</button> : null}
    </section>
  );
}
