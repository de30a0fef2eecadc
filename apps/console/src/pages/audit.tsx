// The audit log: every write through the API, newest first, page by page, filtered by resource.
import { useState } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { request } from '../lib/api.js';
import { formatRoute, type Route } from '../lib/routes.js';
import { Busy, ErrorNote, PageHeader, fmtTime, useLoad } from '../ui.js';

const PAGE_SIZE = 50;

export function Audit({ route }: { route: Route }) {
  const parsedResource = AdminApi.AuditResource.safeParse(route.params.resource);
  const resource = parsedResource.success ? parsedResource.data : undefined;
  // The cursors of the pages before this one, so "Newer" can go back.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const page = useLoad((signal) => request('GET', '/audit', AdminApi.Page(AdminApi.AuditEntry), { query: { resource, limit: PAGE_SIZE, cursor }, signal }), [resource, cursor]);

  const filter = (value: string) => {
    setCursors([undefined]);
    location.hash = formatRoute({ page: 'audit', params: { resource: value || undefined } });
  };

  return (
    <section>
      <PageHeader title="Audit log">
        <select id="audit-resource" aria-label="resource" value={resource ?? ''} onChange={(e) => filter(e.target.value)}>
          <option value="">all resources</option>
          {AdminApi.AuditResource.options.map((r) => <option key={r} value={r}>{r}</option>)}
        </select>
        <button onClick={page.reload} disabled={page.loading}>Refresh</button>
      </PageHeader>
      <ErrorNote error={page.error} />
      <Busy on={page.loading} />
      {page.data ? (
        <>
          <table className="audit">
            <thead><tr><th>At</th><th>Actor</th><th>Resource</th><th>Action</th><th>Version</th><th>Changes</th></tr></thead>
            <tbody>
              {page.data.items.map((e) => (
                <tr key={e.id} data-id={e.id} data-resource={e.resource}>
                  <td>{fmtTime(e.at)}</td><td>{e.actor}</td><td>{e.resource} <span className="mono">{e.resourceId}</span></td><td>{e.action}</td>
                  <td>{e.versionBefore ?? '—'} → {e.versionAfter ?? '—'}</td><td>{e.changes.join(', ')}</td>
                </tr>
              ))}
              {page.data.items.length === 0 ? <tr><td colSpan={6} className="empty">No entries.</td></tr> : null}
            </tbody>
          </table>
          <div className="buttons">
            <button onClick={() => setCursors((c) => c.slice(0, -1))} disabled={cursors.length < 2}>Newer</button>
            <button onClick={() => { const next = page.data?.nextCursor; if (next) setCursors((c) => [...c, next]); }} disabled={!page.data.nextCursor}>Older</button>
          </div>
        </>
      ) : null}
    </section>
  );
}
