// Agent Skills: the installed ones (listed, inspected with their SKILL.md and files, deleted), a new
// one installed from a zip of its folder, or saved from a folder the agent wrote in a sandbox
// workspace. A pipeline binds skills under its extensions preferences.
import { useRef, useState, type FormEvent } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { listAll, request } from '../lib/api.js';
import { formatRoute, type Route } from '../lib/routes.js';
import { Busy, DoneNote, ErrorNote, Field, PageHeader, useAction, useLoad } from '../ui.js';
import { Code, richText, useI18n } from '../i18n/react.js';

const base = (name: string) => `/skills/${encodeURIComponent(name)}`;
/** The upload bound (SKILL_LIMITS.uploadBytes in the sandbox library), told to the reader. */
const UPLOAD_MB = 8;

export function Skills({ route, canWrite }: { route: Route; canWrite: boolean }) {
  if (route.id) return <SkillView name={route.id} canWrite={canWrite} />;
  return <SkillList canWrite={canWrite} workspace={route.params.workspace} />;
}

function SkillList({ canWrite, workspace }: { canWrite: boolean; workspace?: string }) {
  const list = useLoad((signal) => listAll('/skills', AdminApi.Skill, { signal }), []);
  const i18n = useI18n();
  const { t } = i18n;
  return (
    <section>
      <PageHeader title={t('skills.title')}><button onClick={list.reload} disabled={list.loading}>{t('common.refresh')}</button></PageHeader>
      <p className="hint">{richText(i18n, 'skills.hint', { file: <Code>SKILL.md</Code> })}</p>
      {canWrite ? <SkillUpload onInstalled={list.reload} /> : null}
      {canWrite ? <SkillFromWorkspace key={workspace ?? ''} workspace={workspace} onInstalled={list.reload} /> : null}
      <ErrorNote error={list.error} />
      <Busy on={list.loading} />
      {list.data ? (
        <table id="skill-list">
          <thead><tr><th>{t('common.name')}</th><th>{t('skills.description')}</th><th>{t('skills.files')}</th><th>{t('skills.size')}</th><th>{t('skills.revision')}</th><th>{t('pipelines.managedBy')}</th><th>{t('common.updated')}</th></tr></thead>
          <tbody>
            {list.data.items.map((s) => (
              <tr key={s.name} data-name={s.name}>
                <td translate="no"><a href={formatRoute({ page: 'skills', id: s.name })}>{s.name}</a></td>
                <td translate="no">{s.description}</td>
                <td>{s.files}</td>
                <td>{t('skills.bytes', { n: s.bytes })}</td>
                <td>{s.revision}</td>
                <td>{i18n.lookup(`managedBy.${s.managedBy}`) ?? s.managedBy}</td>
                <td>{i18n.dateTime(s.updatedAt)}</td>
              </tr>
            ))}
            {list.data.items.length === 0 ? <tr><td colSpan={7} className="empty">{t('skills.empty')}</td></tr> : null}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}

function installedNote(done: AdminApi.SkillInstalled, t: ReturnType<typeof useI18n>['t']): string {
  return done.outcome === 'created' ? t('skills.installed', { name: done.skill.name }) : t('skills.replaced', { name: done.skill.name, revision: done.skill.revision });
}

/** A zip of the skill's folder (or of its contents), sent as the body itself. */
function SkillUpload({ onInstalled }: { onInstalled: () => void }) {
  const upload = useAction();
  const fileInput = useRef<HTMLInputElement>(null);
  const { t } = useI18n();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void upload.run(async () => {
      const file = fileInput.current?.files?.[0];
      if (!file) throw new Error(t('skills.chooseFile'));
      const done = await request('POST', '/skills', AdminApi.SkillInstalled, { file: { body: file, type: AdminApi.SKILL_UPLOAD_CONTENT_TYPE } });
      if (fileInput.current) fileInput.current.value = '';
      onInstalled();
      return installedNote(done, t);
    });
  };
  return (
    <form className="form" onSubmit={submit} aria-label={t('skills.uploadForm')}>
      <Field label={t('skills.uploadLabel')} htmlFor="skill-file" hint={t('skills.uploadHint', { mb: UPLOAD_MB })}>
        <input id="skill-file" type="file" ref={fileInput} accept=".zip,application/zip" />
      </Field>
      <div className="buttons"><button type="submit" disabled={upload.busy}>{upload.busy ? t('skills.installing') : t('skills.install')}</button></div>
      <ErrorNote error={upload.error} />
      <DoneNote text={upload.done} />
    </form>
  );
}

/** A folder the agent wrote in a sandbox workspace (a SKILL.md and its scripts), saved as a skill. */
function SkillFromWorkspace({ workspace, onInstalled }: { workspace?: string; onInstalled: () => void }) {
  const [id, setId] = useState(workspace ?? '');
  const [folder, setFolder] = useState('');
  const save = useAction();
  const i18n = useI18n();
  const { t } = i18n;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void save.run(async () => {
      const done = await request('POST', '/skills/from-workspace', AdminApi.SkillInstalled, { body: { workspace: id.trim(), path: folder.trim() } });
      onInstalled();
      return installedNote(done, t);
    });
  };
  return (
    <form className="form" onSubmit={submit} aria-label={t('skills.fromWorkspaceForm')}>
      <h3>{t('skills.fromWorkspace')}</h3>
      <p className="hint">{richText(i18n, 'skills.fromWorkspaceHint', { root: <Code>/workspace</Code>, file: <Code>SKILL.md</Code> })}</p>
      <Field label={t('skills.workspace')} htmlFor="skill-workspace"><input id="skill-workspace" className="mono" translate="no" value={id} onChange={(e) => setId(e.target.value)} required /></Field>
      <Field label={t('skills.folder')} htmlFor="skill-folder"><input id="skill-folder" className="mono" translate="no" placeholder="/workspace/my-skill" value={folder} onChange={(e) => setFolder(e.target.value)} required /></Field>
      <div className="buttons"><button type="submit" disabled={save.busy || !id.trim() || !folder.trim()}>{save.busy ? t('common.saving') : t('skills.saveFromWorkspace')}</button></div>
      <ErrorNote error={save.error} />
      <DoneNote text={save.done} />
    </form>
  );
}

function SkillView({ name, canWrite }: { name: string; canWrite: boolean }) {
  const one = useLoad((signal) => request('GET', base(name), AdminApi.SkillDetail, { signal }), [name]);
  const remove = useAction();
  const i18n = useI18n();
  const { t } = i18n;
  if (one.error) return <ErrorNote error={one.error} />;
  if (!one.data) return <Busy on />;
  const skill = one.data;
  return (
    <section>
      <PageHeader title={t('skills.detailTitle', { name: skill.name })}><a href={formatRoute({ page: 'skills' })}>{t('skills.all')}</a></PageHeader>
      <p className="meta">{t('skills.meta', { revision: skill.revision, managedBy: i18n.lookup(`managedBy.${skill.managedBy}`) ?? skill.managedBy, updated: i18n.dateTime(skill.updatedAt), files: skill.files, bytes: skill.bytes })}</p>
      <h3>{t('skills.description')}</h3>
      <p id="skill-description" translate="no">{skill.description}</p>
      <h3>{richText(i18n, 'skills.skillMd', { file: <Code>SKILL.md</Code> })}</h3>
      <pre id="skill-md" className="mono" translate="no">{skill.skillMd}</pre>
      <h3>{t('skills.files')}</h3>
      <table id="skill-files">
        <thead><tr><th>{t('skills.path')}</th><th>{t('skills.size')}</th></tr></thead>
        <tbody>
          {skill.fileList.map((f) => (
            <tr key={f.path} data-path={f.path}><td className="mono" translate="no">{f.path}</td><td>{t('skills.bytes', { n: f.bytes })}</td></tr>
          ))}
        </tbody>
      </table>
      {canWrite ? (
        <div className="buttons">
          <button type="button" className="danger" disabled={remove.busy} onClick={() => {
            if (!confirm(t('skills.deleteConfirm', { name: skill.name }))) return;
            void remove.run(async () => {
              await request('DELETE', base(skill.name), null);
              location.hash = formatRoute({ page: 'skills' });
            });
          }}>{t('common.delete')}</button>
        </div>
      ) : null}
      <ErrorNote error={remove.error} />
    </section>
  );
}
