// MCP servers the local agent may call: transport, its settings, on or off, a connection test.
import { useState, type FormEvent } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { listAll, request } from '../lib/api.js';
import { formatRoute, type Route } from '../lib/routes.js';
import { Busy, DoneNote, ErrorNote, Field, PageHeader, parseJsonObject, useAction, useLoad } from '../ui.js';
import { useI18n } from '../i18n/react.js';

const TRANSPORTS = AdminApi.McpTransport.options;
type Transport = (typeof TRANSPORTS)[number];
const TEMPLATES: Record<Transport, Record<string, unknown>> = {
  http: { url: 'http://localhost:3000/mcp', headers: {} },
  sse: { url: 'http://localhost:3000/sse', headers: {} },
  // Run by the sandbox role; `network: false` cuts a server that needs no network off from it.
  stdio: { command: 'node', args: ['server.js'], env: {}, network: true },
};

function isTransport(s: string): s is Transport {
  return TRANSPORTS.some((t) => t === s);
}

export function McpServers({ route, canWrite }: { route: Route; canWrite: boolean }) {
  if (route.id === 'new') return <McpEditor canWrite={canWrite} />;
  if (route.id) return <McpLoader id={route.id} canWrite={canWrite} />;
  return <McpList canWrite={canWrite} />;
}

function McpList({ canWrite }: { canWrite: boolean }) {
  const list = useLoad((signal) => listAll('/mcp-servers', AdminApi.McpServer, { signal }), []);
  const { t, dateTime } = useI18n();
  return (
    <section>
      <PageHeader title={t('mcp.title')}>{canWrite ? <a className="button" href={formatRoute({ page: 'mcp-servers', id: 'new' })}>{t('mcp.new')}</a> : null}</PageHeader>
      <ErrorNote error={list.error} />
      <Busy on={list.loading} />
      {list.data ? (
        <table>
          <thead><tr><th>{t('common.id')}</th><th>{t('common.name')}</th><th>{t('mcp.transport')}</th><th>{t('common.enabled')}</th><th>{t('common.updated')}</th></tr></thead>
          <tbody>
            {list.data.items.map((m) => (
              <tr key={m.id} data-id={m.id}>
                <td translate="no"><a href={formatRoute({ page: 'mcp-servers', id: m.id })}>{m.id}</a></td>
                <td translate="no">{m.name}</td><td translate="no">{m.transport}</td><td>{m.enabled ? t('common.yes') : t('common.no')}</td><td>{dateTime(m.updatedAt)}</td>
              </tr>
            ))}
            {list.data.items.length === 0 ? <tr><td colSpan={5} className="empty">{t('mcp.empty')}</td></tr> : null}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}

function McpLoader({ id, canWrite }: { id: string; canWrite: boolean }) {
  const one = useLoad((signal) => request('GET', `/mcp-servers/${encodeURIComponent(id)}`, AdminApi.McpServer, { signal }), [id]);
  // Kept here: a saved row comes back with a new version, which remounts the editor.
  const [notice, setNotice] = useState<string>();
  if (one.error) return <ErrorNote error={one.error} />;
  if (!one.data) return <Busy on />;
  return <McpEditor key={`${one.data.id}@${one.data.version}`} server={one.data} canWrite={canWrite} notice={notice} onSaved={(n) => { setNotice(n); one.reload(); }} />;
}

function McpEditor({ server, canWrite, notice, onSaved }: { server?: AdminApi.McpServer; canWrite: boolean; notice?: string; onSaved?: (note: string) => void }) {
  const [id, setId] = useState(server?.id ?? '');
  const [name, setName] = useState(server?.name ?? '');
  const [transport, setTransport] = useState<Transport>(server && isTransport(server.transport) ? server.transport : 'http');
  const [enabled, setEnabled] = useState(server?.enabled ?? true);
  const [config, setConfig] = useState(JSON.stringify(server?.config ?? TEMPLATES.http, null, 2));
  const save = useAction();
  const test = useAction();
  const remove = useAction();
  const i18n = useI18n();
  const { t } = i18n;

  const submit = (e: FormEvent) => {
    e.preventDefault();
    void save.run(async () => {
      const body = { name: name.trim() || undefined, transport, config: parseJsonObject(config, t('mcp.settingsField'), i18n), enabled };
      if (!server) {
        const created = await request('POST', '/mcp-servers', AdminApi.McpServer, { body: { id: id.trim(), ...body } });
        location.hash = formatRoute({ page: 'mcp-servers', id: created.id });
        return;
      }
      await request('PATCH', `/mcp-servers/${encodeURIComponent(server.id)}`, AdminApi.McpServer, { body, version: server.version });
      onSaved?.(t('common.saved'));
    });
  };

  return (
    <section>
      <PageHeader title={server ? t('mcp.editTitle', { id: server.id }) : t('mcp.new')}><a href={formatRoute({ page: 'mcp-servers' })}>{t('mcp.all')}</a></PageHeader>
      <form className="form" onSubmit={submit} aria-label={t('mcp.form')}>
        {server ? <p className="meta">{t('common.meta', { version: server.version, managedBy: i18n.lookup(`managedBy.${server.managedBy}`) ?? server.managedBy, updated: i18n.dateTime(server.updatedAt) })}</p> : (
          <Field label={t('common.id')} htmlFor="mcp-id"><input id="mcp-id" value={id} onChange={(e) => setId(e.target.value)} required /></Field>
        )}
        <Field label={t('common.name')} htmlFor="mcp-name"><input id="mcp-name" value={name} onChange={(e) => setName(e.target.value)} /></Field>
        <Field label={t('mcp.transport')} htmlFor="mcp-transport">
          <select id="mcp-transport" value={transport} onChange={(e) => {
            const next = isTransport(e.target.value) ? e.target.value : 'http';
            setTransport(next);
            if (!server) setConfig(JSON.stringify(TEMPLATES[next], null, 2));
          }}>
            {TRANSPORTS.map((tr) => <option key={tr} value={tr} translate="no">{tr}</option>)}
          </select>
        </Field>
        <label className="inline"><input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} /> {t('common.enabled')}</label>
        <Field label={t('mcp.settings')} htmlFor="mcp-config" hint={t('common.maskedHint')}>
          <textarea id="mcp-config" className="mono" translate="no" rows={8} value={config} onChange={(e) => setConfig(e.target.value)} spellCheck={false} />
        </Field>
        <div className="buttons">
          <button type="submit" disabled={!canWrite || save.busy}>{save.busy ? t('common.saving') : server ? t('common.save') : t('mcp.create')}</button>
          {server && canWrite ? (
            <>
              <button type="button" disabled={test.busy} onClick={() => void test.run(async () => {
                const r = await request('POST', `/mcp-servers/${encodeURIComponent(server.id)}/test`, AdminApi.McpServerTestResult);
                if (!r.ok) throw new Error(t('common.testFailed', { ms: Math.round(r.latencyMs), error: r.error ?? t('common.noAnswer') }));
                return t('mcp.connected', { ms: Math.round(r.latencyMs), tools: (r.tools ?? []).join(', ') || t('common.none') });
              })}>{test.busy ? t('common.testing') : t('common.test')}</button>
              <button type="button" className="danger" disabled={remove.busy} onClick={() => {
                if (!confirm(t('mcp.deleteConfirm', { id: server.id }))) return;
                void remove.run(async () => {
                  await request('DELETE', `/mcp-servers/${encodeURIComponent(server.id)}`, null, { version: server.version });
                  location.hash = formatRoute({ page: 'mcp-servers' });
                });
              }}>{t('common.delete')}</button>
            </>
          ) : null}
        </div>
        <ErrorNote error={save.error ?? test.error ?? remove.error} />
        <DoneNote text={save.done ?? test.done ?? (save.error ? undefined : notice)} />
      </form>
    </section>
  );
}
