// MCP servers the local agent may call: transport, its settings, on or off, a connection test.
import { useState, type FormEvent } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { listAll, request } from '../lib/api.js';
import { formatRoute, type Route } from '../lib/routes.js';
import { Busy, DoneNote, ErrorNote, Field, PageHeader, fmtTime, parseJsonObject, useAction, useLoad } from '../ui.js';

const TRANSPORTS = AdminApi.McpTransport.options;
type Transport = (typeof TRANSPORTS)[number];
const TEMPLATES: Record<Transport, Record<string, unknown>> = {
  http: { url: 'http://localhost:3000/mcp', headers: {} },
  sse: { url: 'http://localhost:3000/sse', headers: {} },
  stdio: { command: 'node', args: ['server.js'], env: {} },
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
  return (
    <section>
      <PageHeader title="MCP servers">{canWrite ? <a className="button" href={formatRoute({ page: 'mcp-servers', id: 'new' })}>New MCP server</a> : null}</PageHeader>
      <ErrorNote error={list.error} />
      <Busy on={list.loading} />
      {list.data ? (
        <table>
          <thead><tr><th>Id</th><th>Name</th><th>Transport</th><th>Enabled</th><th>Updated</th></tr></thead>
          <tbody>
            {list.data.items.map((m) => (
              <tr key={m.id} data-id={m.id}>
                <td><a href={formatRoute({ page: 'mcp-servers', id: m.id })}>{m.id}</a></td>
                <td>{m.name}</td><td>{m.transport}</td><td>{m.enabled ? 'yes' : 'no'}</td><td>{fmtTime(m.updatedAt)}</td>
              </tr>
            ))}
            {list.data.items.length === 0 ? <tr><td colSpan={5} className="empty">No MCP servers yet.</td></tr> : null}
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

  const submit = (e: FormEvent) => {
    e.preventDefault();
    void save.run(async () => {
      const body = { name: name.trim() || undefined, transport, config: parseJsonObject(config, 'settings'), enabled };
      if (!server) {
        const created = await request('POST', '/mcp-servers', AdminApi.McpServer, { body: { id: id.trim(), ...body } });
        location.hash = formatRoute({ page: 'mcp-servers', id: created.id });
        return;
      }
      await request('PATCH', `/mcp-servers/${encodeURIComponent(server.id)}`, AdminApi.McpServer, { body, version: server.version });
      onSaved?.('Saved.');
    });
  };

  return (
    <section>
      <PageHeader title={server ? `MCP server ${server.id}` : 'New MCP server'}><a href={formatRoute({ page: 'mcp-servers' })}>All MCP servers</a></PageHeader>
      <form className="form" onSubmit={submit} aria-label="MCP server">
        {server ? <p className="meta">Version {server.version}, managed by {server.managedBy}, updated {fmtTime(server.updatedAt)}</p> : (
          <Field label="Id" htmlFor="mcp-id"><input id="mcp-id" value={id} onChange={(e) => setId(e.target.value)} required /></Field>
        )}
        <Field label="Name" htmlFor="mcp-name"><input id="mcp-name" value={name} onChange={(e) => setName(e.target.value)} /></Field>
        <Field label="Transport" htmlFor="mcp-transport">
          <select id="mcp-transport" value={transport} onChange={(e) => {
            const next = isTransport(e.target.value) ? e.target.value : 'http';
            setTransport(next);
            if (!server) setConfig(JSON.stringify(TEMPLATES[next], null, 2));
          }}>
            {TRANSPORTS.map((t) => <option key={t} value={t}>{t}</option>)}
          </select>
        </Field>
        <label className="inline"><input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} /> Enabled</label>
        <Field label="Settings (JSON)" htmlFor="mcp-config" hint="Masked secrets (••••…) left as they are keep the stored value.">
          <textarea id="mcp-config" className="mono" rows={8} value={config} onChange={(e) => setConfig(e.target.value)} spellCheck={false} />
        </Field>
        <div className="buttons">
          <button type="submit" disabled={!canWrite || save.busy}>{save.busy ? 'Saving…' : server ? 'Save' : 'Create MCP server'}</button>
          {server && canWrite ? (
            <>
              <button type="button" disabled={test.busy} onClick={() => void test.run(async () => {
                const r = await request('POST', `/mcp-servers/${encodeURIComponent(server.id)}/test`, AdminApi.McpServerTestResult);
                if (!r.ok) throw new Error(`Test failed after ${Math.round(r.latencyMs)} ms: ${r.error ?? 'no answer'}`);
                return `Connected in ${Math.round(r.latencyMs)} ms; tools: ${(r.tools ?? []).join(', ') || 'none'}.`;
              })}>{test.busy ? 'Testing…' : 'Test'}</button>
              <button type="button" className="danger" disabled={remove.busy} onClick={() => {
                if (!confirm(`Delete MCP server ${server.id}?`)) return;
                void remove.run(async () => {
                  await request('DELETE', `/mcp-servers/${encodeURIComponent(server.id)}`, null, { version: server.version });
                  location.hash = formatRoute({ page: 'mcp-servers' });
                });
              }}>Delete</button>
            </>
          ) : null}
        </div>
        <ErrorNote error={save.error ?? test.error ?? remove.error} />
        <DoneNote text={save.done ?? test.done ?? (save.error ? undefined : notice)} />
      </form>
    </section>
  );
}
