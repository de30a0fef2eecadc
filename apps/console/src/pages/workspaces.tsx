// Sandbox workspaces: the files the agent's sandbox keeps between calls, one workspace per pipeline
// and sharing scope (`box-session-id-template`): their size, when last used, a folder of one saved as
// a skill, and deletion (the next call starts with an empty workspace).
import { AdminApi } from '@conveyor/contracts';
import { listAll, request } from '../lib/api.js';
import { formatRoute } from '../lib/routes.js';
import { Busy, DoneNote, ErrorNote, PageHeader, useAction, useLoad } from '../ui.js';
import { useI18n } from '../i18n/react.js';

export function Workspaces({ canWrite }: { canWrite: boolean }) {
  const list = useLoad((signal) => listAll('/sandbox/workspaces', AdminApi.SandboxWorkspace, { signal }), []);
  const act = useAction();
  const i18n = useI18n();
  const { t } = i18n;
  return (
    <section>
      <PageHeader title={t('workspaces.title')}><button onClick={list.reload} disabled={list.loading}>{t('common.refresh')}</button></PageHeader>
      <p className="hint">{t('workspaces.hint')}</p>
      <ErrorNote error={list.error ?? act.error} />
      <DoneNote text={act.done} />
      <Busy on={list.loading} />
      {list.data ? (
        <table id="workspace-list">
          <thead><tr><th>{t('common.id')}</th><th>{t('skills.size')}</th><th>{t('skills.files')}</th><th>{t('workspaces.lastUsed')}</th><th>{t('common.updated')}</th>{canWrite ? <th>{t('kb.actions')}</th> : null}</tr></thead>
          <tbody>
            {list.data.items.map((w) => (
              <tr key={w.id} data-id={w.id}>
                <td className="mono" translate="no">{w.id}</td>
                <td>{t('skills.bytes', { n: w.bytes })}</td>
                <td>{w.files}</td>
                <td>{i18n.dateTime(w.lastUsedAt)}</td>
                <td>{i18n.dateTime(w.updatedAt)}</td>
                {canWrite ? (
                  <td>
                    <a href={formatRoute({ page: 'skills', params: { workspace: w.id } })}>{t('workspaces.saveSkill')}</a>{' '}
                    <button type="button" className="danger" disabled={act.busy} onClick={() => {
                      if (!confirm(t('workspaces.deleteConfirm', { id: w.id }))) return;
                      void act.run(async () => {
                        await request('DELETE', `/sandbox/workspaces/${encodeURIComponent(w.id)}`, null);
                        list.reload();
                        return t('workspaces.deleted', { id: w.id });
                      });
                    }}>{t('common.delete')}</button>
                  </td>
                ) : null}
              </tr>
            ))}
            {list.data.items.length === 0 ? <tr><td colSpan={canWrite ? 6 : 5} className="empty">{t('workspaces.empty')}</td></tr> : null}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}
