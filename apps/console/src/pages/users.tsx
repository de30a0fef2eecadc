// Users of the console and the API: create one with a role, change the role, set a new password,
// disable (sign-in refused, sessions ended) or enable again, delete. The last admin cannot be demoted or deleted (the API says so).
import { useState, type FormEvent } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { listAll, request } from '../lib/api.js';
import { Busy, DoneNote, ErrorNote, Field, PageHeader, useAction, useLoad } from '../ui.js';
import { useI18n } from '../i18n/react.js';

const roleOf = (value: string): AdminApi.Role => (value === 'admin' ? 'admin' : 'viewer');

export function Users() {
  const list = useLoad((signal) => listAll('/users', AdminApi.User, { signal }), []);
  const action = useAction();
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [role, setRole] = useState<AdminApi.Role>('viewer');
  const { t, dateTime } = useI18n();

  const create = (e: FormEvent) => {
    e.preventDefault();
    void action.run(async () => {
      const user = await request('POST', '/users', AdminApi.User, { body: { username, password, role } });
      setUsername('');
      setPassword('');
      list.reload();
      return t('users.createdNote', { username: user.username, role: t(`role.${user.role}`) });
    });
  };
  const changeRole = (u: AdminApi.User, next: AdminApi.Role) => void action.run(async () => {
    await request('PATCH', `/users/${encodeURIComponent(u.username)}`, AdminApi.User, { body: { role: next } });
    list.reload();
    return t('users.roleChanged', { username: u.username, role: t(`role.${next}`) });
  });
  const resetPassword = (u: AdminApi.User) => {
    const next = prompt(t('users.passwordPrompt', { username: u.username }));
    if (!next) return;
    void action.run(async () => {
      await request('PATCH', `/users/${encodeURIComponent(u.username)}`, AdminApi.User, { body: { password: next } });
      return t('users.passwordChanged', { username: u.username });
    });
  };
  const toggle = (u: AdminApi.User) => void action.run(async () => {
    await request('PATCH', `/users/${encodeURIComponent(u.username)}`, AdminApi.User, { body: { disabled: !u.disabled } });
    list.reload();
    return u.disabled ? t('users.enabledNote', { username: u.username }) : t('users.disabledNote', { username: u.username });
  });
  const remove = (u: AdminApi.User) => {
    if (!confirm(t('users.deleteConfirm', { username: u.username }))) return;
    void action.run(async () => {
      await request('DELETE', `/users/${encodeURIComponent(u.username)}`, null);
      list.reload();
      return t('users.deleted', { username: u.username });
    });
  };

  return (
    <section>
      <PageHeader title={t('users.title')}>
        <button onClick={list.reload} disabled={list.loading}>{t('common.refresh')}</button>
      </PageHeader>
      <ErrorNote error={list.error ?? action.error} />
      <DoneNote text={action.done} />
      <Busy on={list.loading} />
      {list.data ? (
        <table>
          <thead><tr><th>{t('users.user')}</th><th>{t('users.role')}</th><th>{t('users.status')}</th><th>{t('users.created')}</th><th /></tr></thead>
          <tbody>
            {list.data.items.map((u) => (
              <tr key={u.username} data-id={u.username}>
                <td translate="no">{u.username}</td>
                <td>
                  <select aria-label={t('users.roleOf', { username: u.username })} value={u.role} disabled={action.busy} onChange={(e) => changeRole(u, roleOf(e.target.value))}>
                    <option value="admin">{t('role.admin')}</option>
                    <option value="viewer">{t('role.viewer')}</option>
                  </select>
                </td>
                <td className="user-status" data-status={u.disabled ? 'disabled' : 'active'}>{u.disabled ? t('users.disabled') : t('users.active')}</td>
                <td>{dateTime(u.createdAt)}</td>
                <td className="buttons">
                  <button onClick={() => resetPassword(u)} disabled={action.busy}>{t('users.setPassword')}</button>
                  <button onClick={() => toggle(u)} disabled={action.busy}>{u.disabled ? t('users.enable') : t('users.disable')}</button>
                  <button className="danger" onClick={() => remove(u)} disabled={action.busy}>{t('common.delete')}</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <form aria-label={t('users.newForm')} onSubmit={create}>
        <h2>{t('users.newTitle')}</h2>
        <Field label={t('users.userName')} htmlFor="user-name"><input id="user-name" value={username} onChange={(e) => setUsername(e.target.value)} required /></Field>
        <Field label={t('users.password')} htmlFor="user-password" hint={t('users.passwordHint')}><input id="user-password" type="password" value={password} onChange={(e) => setPassword(e.target.value)} required /></Field>
        <Field label={t('users.role')} htmlFor="user-role">
          <select id="user-role" value={role} onChange={(e) => setRole(roleOf(e.target.value))}>
            <option value="viewer">{t('role.viewer')}</option>
            <option value="admin">{t('role.admin')}</option>
          </select>
        </Field>
        <button type="submit" disabled={action.busy}>{t('users.create')}</button>
      </form>
    </section>
  );
}
