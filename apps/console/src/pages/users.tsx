// Users of the console and the API: create one with a role, change the role, set a new password,
// disable (sign-in refused, sessions ended) or enable again, delete. The last admin cannot be demoted or deleted (the API says so).
import { useState, type FormEvent } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { listAll, request } from '../lib/api.js';
import { Busy, DoneNote, ErrorNote, Field, PageHeader, fmtTime, useAction, useLoad } from '../ui.js';

const roleOf = (value: string): AdminApi.Role => (value === 'admin' ? 'admin' : 'viewer');

export function Users() {
  const list = useLoad((signal) => listAll('/users', AdminApi.User, { signal }), []);
  const action = useAction();
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [role, setRole] = useState<AdminApi.Role>('viewer');

  const create = (e: FormEvent) => {
    e.preventDefault();
    void action.run(async () => {
      const user = await request('POST', '/users', AdminApi.User, { body: { username, password, role } });
      setUsername('');
      setPassword('');
      list.reload();
      return `User ${user.username} created (${user.role}).`;
    });
  };
  const changeRole = (u: AdminApi.User, next: AdminApi.Role) => void action.run(async () => {
    await request('PATCH', `/users/${encodeURIComponent(u.username)}`, AdminApi.User, { body: { role: next } });
    list.reload();
    return `${u.username} is now ${next}.`;
  });
  const resetPassword = (u: AdminApi.User) => {
    const next = prompt(`New password for ${u.username} (at least 12 characters)`);
    if (!next) return;
    void action.run(async () => {
      await request('PATCH', `/users/${encodeURIComponent(u.username)}`, AdminApi.User, { body: { password: next } });
      return `Password of ${u.username} changed.`;
    });
  };
  const toggle = (u: AdminApi.User) => void action.run(async () => {
    await request('PATCH', `/users/${encodeURIComponent(u.username)}`, AdminApi.User, { body: { disabled: !u.disabled } });
    list.reload();
    return `${u.username} ${u.disabled ? 'enabled' : 'disabled'}.`;
  });
  const remove = (u: AdminApi.User) => {
    if (!confirm(`Delete user ${u.username}? Their sessions end.`)) return;
    void action.run(async () => {
      await request('DELETE', `/users/${encodeURIComponent(u.username)}`, null);
      list.reload();
      return `User ${u.username} deleted.`;
    });
  };

  return (
    <section>
      <PageHeader title="Users">
        <button onClick={list.reload} disabled={list.loading}>Refresh</button>
      </PageHeader>
      <ErrorNote error={list.error ?? action.error} />
      <DoneNote text={action.done} />
      <Busy on={list.loading} />
      {list.data ? (
        <table>
          <thead><tr><th>User</th><th>Role</th><th>Status</th><th>Created</th><th /></tr></thead>
          <tbody>
            {list.data.items.map((u) => (
              <tr key={u.username} data-id={u.username}>
                <td>{u.username}</td>
                <td>
                  <select aria-label={`role of ${u.username}`} value={u.role} disabled={action.busy} onChange={(e) => changeRole(u, roleOf(e.target.value))}>
                    <option value="admin">admin</option>
                    <option value="viewer">viewer</option>
                  </select>
                </td>
                <td className="user-status">{u.disabled ? 'disabled' : 'active'}</td>
                <td>{fmtTime(u.createdAt)}</td>
                <td className="buttons">
                  <button onClick={() => resetPassword(u)} disabled={action.busy}>Set password</button>
                  <button onClick={() => toggle(u)} disabled={action.busy}>{u.disabled ? 'Enable' : 'Disable'}</button>
                  <button className="danger" onClick={() => remove(u)} disabled={action.busy}>Delete</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <form aria-label="new user" onSubmit={create}>
        <h2>New user</h2>
        <Field label="User name" htmlFor="user-name"><input id="user-name" value={username} onChange={(e) => setUsername(e.target.value)} required /></Field>
        <Field label="Password" htmlFor="user-password" hint="At least 12 characters"><input id="user-password" type="password" value={password} onChange={(e) => setPassword(e.target.value)} required /></Field>
        <Field label="Role" htmlFor="user-role">
          <select id="user-role" value={role} onChange={(e) => setRole(roleOf(e.target.value))}>
            <option value="viewer">viewer</option>
            <option value="admin">admin</option>
          </select>
        </Field>
        <button type="submit" disabled={action.busy}>Create user</button>
      </form>
    </section>
  );
}
