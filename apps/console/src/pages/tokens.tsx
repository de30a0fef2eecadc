// API tokens for automation: the secret is shown once, right after creation (only its hash is
// stored); revoking ends it at once.
import { useState, type FormEvent } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { listAll, request } from '../lib/api.js';
import { Busy, DoneNote, ErrorNote, Field, PageHeader, useAction, useLoad } from '../ui.js';
import { Code, richText, useI18n } from '../i18n/react.js';

export function Tokens() {
  const list = useLoad((signal) => listAll('/tokens', AdminApi.ApiToken, { signal }), []);
  const action = useAction();
  const [name, setName] = useState('');
  const [role, setRole] = useState<AdminApi.Role>('viewer');
  const [days, setDays] = useState('');
  const [created, setCreated] = useState<AdminApi.ApiTokenCreated>();
  const i18n = useI18n();
  const { t, dateTime } = i18n;

  const create = (e: FormEvent) => {
    e.preventDefault();
    const expiresInDays = days.trim() ? Number(days) : undefined;
    void action.run(async () => {
      const answer = await request('POST', '/tokens', AdminApi.ApiTokenCreated, { body: { name, role, ...(expiresInDays !== undefined ? { expiresInDays } : {}) } });
      setCreated(answer);
      setName('');
      list.reload();
      return t('tokens.createdNote', { name: answer.token.name });
    });
  };
  const revoke = (token: AdminApi.ApiToken) => {
    if (!confirm(t('tokens.revokeConfirm', { name: token.name }))) return;
    void action.run(async () => {
      await request('DELETE', `/tokens/${encodeURIComponent(token.id)}`, null);
      if (created?.token.id === token.id) setCreated(undefined);
      list.reload();
      return t('tokens.revoked', { name: token.name });
    });
  };

  return (
    <section>
      <PageHeader title={t('tokens.title')}>
        <button onClick={list.reload} disabled={list.loading}>{t('common.refresh')}</button>
      </PageHeader>
      <ErrorNote error={list.error ?? action.error} />
      <DoneNote text={action.done} />
      {created ? (
        <div className="note ok" id="token-created">
          <p>{richText(i18n, 'tokens.copySecret', { name: <Code>{created.token.name}</Code>, header: <Code>Authorization: Bearer …</Code> })}</p>
          <pre id="token-secret" translate="no">{created.secret}</pre>
          <button onClick={() => setCreated(undefined)}>{t('tokens.done')}</button>
        </div>
      ) : null}
      <Busy on={list.loading} />
      {list.data ? (
        <table>
          <thead><tr><th>{t('common.name')}</th><th>{t('tokens.role')}</th><th>{t('tokens.createdBy')}</th><th>{t('tokens.created')}</th><th>{t('tokens.expires')}</th><th>{t('tokens.lastUsed')}</th><th /></tr></thead>
          <tbody>
            {list.data.items.map((token) => (
              <tr key={token.id} data-id={token.id}>
                <td translate="no">{token.name}</td><td>{t(`role.${token.role}`)}</td><td translate="no">{token.createdBy}</td><td>{dateTime(token.createdAt)}</td><td>{dateTime(token.expiresAt)}</td><td>{dateTime(token.lastUsedAt)}</td>
                <td><button className="danger" onClick={() => revoke(token)} disabled={action.busy}>{t('tokens.revoke')}</button></td>
              </tr>
            ))}
            {list.data.items.length === 0 ? <tr><td colSpan={7} className="empty">{t('tokens.empty')}</td></tr> : null}
          </tbody>
        </table>
      ) : null}
      <form aria-label={t('tokens.newForm')} onSubmit={create}>
        <h2>{t('tokens.newTitle')}</h2>
        <Field label={t('common.name')} htmlFor="token-name"><input id="token-name" value={name} onChange={(e) => setName(e.target.value)} required /></Field>
        <Field label={t('tokens.role')} htmlFor="token-role">
          <select id="token-role" value={role} onChange={(e) => setRole(e.target.value === 'admin' ? 'admin' : 'viewer')}>
            <option value="viewer">{t('role.viewer')}</option>
            <option value="admin">{t('role.admin')}</option>
          </select>
        </Field>
        <Field label={t('tokens.days')} htmlFor="token-days" hint={t('tokens.daysHint')}><input id="token-days" type="number" min={1} max={3650} value={days} onChange={(e) => setDays(e.target.value)} /></Field>
        <button type="submit" disabled={action.busy}>{t('tokens.create')}</button>
      </form>
    </section>
  );
}
