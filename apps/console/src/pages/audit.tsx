// The audit log: every write through the API, newest first, page by page, filtered by resource.
import { useState } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { request } from '../lib/api.js';
import { formatRoute, type Route } from '../lib/routes.js';
import { Busy, ErrorNote, PageHeader, useLoad } from '../ui.js';
import { useI18n } from '../i18n/react.js';

const PAGE_SIZE = 50;

export function Audit({ route }: { route: Route }) {
  const parsedResource = AdminApi.AuditResource.safeParse(route.params.resource);
  const resource = parsedResource.success ? parsedResource.data : undefined;
  // The cursors of the pages before this one, so "Newer" can go back.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const page = useLoad((signal) => request('GET', '/audit', AdminApi.Page(AdminApi.AuditEntry), { query: { resource, limit: PAGE_SIZE, cursor }, signal }), [resource, cursor]);

  const i18n = useI18n();
  const { t } = i18n;
  const filter = (value: string) => {
    setCursors([undefined]);
    location.hash = formatRoute({ page: 'audit', params: { resource: value || undefined } });
  };

  return (
    <section>
      <PageHeader title={t('audit.title')}>
        <select id="audit-resource" aria-label={t('audit.resourceLabel')} value={resource ?? ''} onChange={(e) => filter(e.target.value)}>
          <option value="">{t('audit.allResources')}</option>
          {AdminApi.AuditResource.options.map((r) => <option key={r} value={r}>{t(`audit.resource.${r}`)}</option>)}
        </select>
        <button onClick={page.reload} disabled={page.loading}>{t('common.refresh')}</button>
      </PageHeader>
      <ErrorNote error={page.error} />
      <Busy on={page.loading} />
      {page.data ? (
        <>
          <table className="audit">
            <thead><tr><th>{t('audit.at')}</th><th>{t('audit.actor')}</th><th>{t('audit.resource')}</th><th>{t('audit.action')}</th><th>{t('audit.version')}</th><th>{t('audit.changes')}</th></tr></thead>
            <tbody>
              {page.data.items.map((e) => (
                <tr key={e.id} data-id={e.id} data-resource={e.resource}>
                  <td>{i18n.dateTime(e.at)}</td><td translate="no">{e.actor}</td><td>{i18n.lookup(`audit.resource.${e.resource}`) ?? e.resource} <span className="mono" translate="no">{e.resourceId}</span></td>
                  <td data-action={e.action}>{i18n.lookup(`audit.action.${e.action}`) ?? e.action}</td>
                  <td>{e.versionBefore ?? '—'} → {e.versionAfter ?? '—'}</td><td className="mono" translate="no">{e.changes.join(', ')}</td>
                </tr>
              ))}
              {page.data.items.length === 0 ? <tr><td colSpan={6} className="empty">{t('audit.empty')}</td></tr> : null}
            </tbody>
          </table>
          <div className="buttons">
            <button onClick={() => setCursors((c) => c.slice(0, -1))} disabled={cursors.length < 2}>{t('common.newer')}</button>
            <button onClick={() => { const next = page.data?.nextCursor; if (next) setCursors((c) => [...c, next]); }} disabled={!page.data.nextCursor}>{t('common.older')}</button>
          </div>
        </>
      ) : null}
    </section>
  );
}
