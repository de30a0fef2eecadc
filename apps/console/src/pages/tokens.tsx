// API tokens for automation: the secret is shown once, right after creation (only its hash is
// stored); revoking ends it at once.
import { useState, type FormEvent } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { listAll, request } from '../lib/api.js';
import { Busy, DoneNote, ErrorNote, Field, PageHeader, fmtTime, useAction, useLoad } from '../ui.js';

export function Tokens() {
  const list = useLoad((signal) => listAll('/tokens', AdminApi.ApiToken, { signal }), []);
  const action = useAction();
  const [name, setName] = useState('');
  const [role, setRole] = useState<AdminApi.Role>('viewer');
  const [days, setDays] = useState('');
  const [created, setCreated] = useState<AdminApi.ApiTokenCreated>();

  const create = (e: FormEvent) => {
    e.preventDefault();
    const expiresInDays = days.trim() ? Number(days) : undefined;
    void action.run(async () => {
      const answer = await request('POST', '/tokens', AdminApi.ApiTokenCreated, { body: { name, role, ...(expiresInDays !== undefined ? { expiresInDays } : {}) } });
      setCreated(answer);
      setName('');
      list.reload();
      return `Token ${answer.token.name} created.`;
    });
  };
  const revoke = (t: AdminApi.ApiToken) => {
    if (!confirm(`Revoke token ${t.name}? Whatever uses it stops working.`)) return;
    void action.run(async () => {
      await request('DELETE', `/tokens/${encodeURIComponent(t.id)}`, null);
      if (created?.token.id === t.id) setCreated(undefined);
      list.reload();
      return `Token ${t.name} revoked.`;
    });
  };

  return (
    <section>
      <PageHeader title="API tokens">
        <button onClick={list.reload} disabled={list.loading}>Refresh</button>
      </PageHeader>
      <ErrorNote error={list.error ?? action.error} />
      <DoneNote text={action.done} />
      {created ? (
        <div className="note ok" id="token-created">
          <p>Copy the secret of {created.token.name} now; it is not shown again. Send it as <span className="mono">Authorization: Bearer …</span></p>
          <pre id="token-secret">{created.secret}</pre>
          <button onClick={() => setCreated(undefined)}>Done</button>
        </div>
      ) : null}
      <Busy on={list.loading} />
      {list.data ? (
        <table>
          <thead><tr><th>Name</th><th>Role</th><th>Created by</th><th>Created</th><th>Expires</th><th>Last used</th><th /></tr></thead>
          <tbody>
            {list.data.items.map((t) => (
              <tr key={t.id} data-id={t.id}>
                <td>{t.name}</td><td>{t.role}</td><td>{t.createdBy}</td><td>{fmtTime(t.createdAt)}</td><td>{fmtTime(t.expiresAt)}</td><td>{fmtTime(t.lastUsedAt)}</td>
                <td><button className="danger" onClick={() => revoke(t)} disabled={action.busy}>Revoke</button></td>
              </tr>
            ))}
            {list.data.items.length === 0 ? <tr><td colSpan={7} className="empty">No tokens.</td></tr> : null}
          </tbody>
        </table>
      ) : null}
      <form aria-label="new token" onSubmit={create}>
        <h2>New token</h2>
        <Field label="Name" htmlFor="token-name"><input id="token-name" value={name} onChange={(e) => setName(e.target.value)} required /></Field>
        <Field label="Role" htmlFor="token-role">
          <select id="token-role" value={role} onChange={(e) => setRole(e.target.value === 'admin' ? 'admin' : 'viewer')}>
            <option value="viewer">viewer</option>
            <option value="admin">admin</option>
          </select>
        </Field>
        <Field label="Expires in days" htmlFor="token-days" hint="Empty: never"><input id="token-days" type="number" min={1} max={3650} value={days} onChange={(e) => setDays(e.target.value)} /></Field>
        <button type="submit" disabled={action.busy}>Create token</button>
      </form>
    </section>
  );
}
