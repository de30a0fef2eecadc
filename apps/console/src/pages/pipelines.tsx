// Pipelines: LangBot's config as a form generated from its schema, or as raw JSON; checked before
// saving (in the browser with the same schema the services use, then by the admin service).
import { useMemo, useState, type FormEvent } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { DEFAULT_PIPELINE_STAGES, parsePipelineConfig, withPipelineDefaults } from '@conveyor/pipeline/config';
import { ApiError, listAll, request } from '../lib/api.js';
import { formatRoute, type Route } from '../lib/routes.js';
import { isRecord } from '../lib/schema-form.js';
import { ConfigForm, SkillsBinding, usePipelineFields } from '../pipeline-form.js';
import { Busy, DoneNote, ErrorNote, Field, PageHeader, parseJsonObject, useAction, useLoad } from '../ui.js';
import { Code, richText, useI18n } from '../i18n/react.js';

export function Pipelines({ route, canWrite }: { route: Route; canWrite: boolean }) {
  if (route.id === 'new') return <NewPipeline canWrite={canWrite} />;
  if (route.id) return <PipelineLoader id={route.id} canWrite={canWrite} />;
  return <PipelineList canWrite={canWrite} />;
}

function PipelineList({ canWrite }: { canWrite: boolean }) {
  const list = useLoad((signal) => listAll('/pipelines', AdminApi.Pipeline, { signal }), []);
  const i18n = useI18n();
  const { t } = i18n;
  const runnerLabel = (runner: string | undefined) => (runner === undefined ? '—' : i18n.lookup(`cfgopt.ai.runner.runner.${runner}`) ?? runner);
  return (
    <section>
      <PageHeader title={t('pipelines.title')}>{canWrite ? <a className="button" href={formatRoute({ page: 'pipelines', id: 'new' })}>{t('pipelines.new')}</a> : null}</PageHeader>
      <ErrorNote error={list.error} />
      <Busy on={list.loading} />
      {list.data ? (
        <table>
          <thead><tr><th>{t('common.id')}</th><th>{t('common.name')}</th><th>{t('pipelines.runner')}</th><th>{t('pipelines.bots')}</th><th>{t('pipelines.managedBy')}</th><th>{t('common.updated')}</th><th></th></tr></thead>
          <tbody>
            {list.data.items.map((p) => (
              <tr key={p.id} data-id={p.id}>
                <td translate="no"><a href={formatRoute({ page: 'pipelines', id: p.id })}>{p.id}</a></td>
                <td translate="no">{p.name}</td>
                <td>{runnerLabel(runnerOf(p.config))}</td>
                <td>{p.botIds.length}</td>
                <td>{i18n.lookup(`managedBy.${p.managedBy}`) ?? p.managedBy}</td>
                <td>{i18n.dateTime(p.updatedAt)}</td>
                <td><a href={formatRoute({ page: 'chat', params: { pipeline: p.id } })}>{t('pipelines.debugChat')}</a></td>
              </tr>
            ))}
            {list.data.items.length === 0 ? <tr><td colSpan={7} className="empty">{t('pipelines.empty')}</td></tr> : null}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}

function runnerOf(config: Record<string, unknown>): string | undefined {
  const ai = config.ai;
  const runner = isRecord(ai) && isRecord(ai.runner) ? ai.runner.runner : undefined;
  return typeof runner === 'string' ? runner : undefined;
}

function NewPipeline({ canWrite }: { canWrite: boolean }) {
  const [id, setId] = useState('');
  const [name, setName] = useState('');
  const create = useAction();
  const { t } = useI18n();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void create.run(async () => {
      const p = await request('POST', '/pipelines', AdminApi.Pipeline, { body: { id: id.trim(), name: name.trim() || undefined, config: {} } });
      location.hash = formatRoute({ page: 'pipelines', id: p.id });
    });
  };
  return (
    <section>
      <PageHeader title={t('pipelines.new')}><a href={formatRoute({ page: 'pipelines' })}>{t('pipelines.all')}</a></PageHeader>
      <form className="form" onSubmit={submit} aria-label={t('pipelines.newForm')}>
        <p>{t('pipelines.newIntro')}</p>
        <Field label={t('common.id')} htmlFor="pipeline-id"><input id="pipeline-id" value={id} onChange={(e) => setId(e.target.value)} required /></Field>
        <Field label={t('common.name')} htmlFor="pipeline-name"><input id="pipeline-name" value={name} onChange={(e) => setName(e.target.value)} /></Field>
        <button type="submit" disabled={!canWrite || create.busy}>{create.busy ? t('pipelines.creating') : t('pipelines.create')}</button>
        <ErrorNote error={create.error} />
      </form>
    </section>
  );
}

function PipelineLoader({ id, canWrite }: { id: string; canWrite: boolean }) {
  const one = useLoad((signal) => request('GET', `/pipelines/${encodeURIComponent(id)}`, AdminApi.Pipeline, { signal }), [id]);
  // Kept here: a saved pipeline comes back with a new version, which remounts the editor.
  const [notice, setNotice] = useState<string>();
  if (one.error) return <ErrorNote error={one.error} />;
  if (!one.data) return <Busy on />;
  const reload = () => { setNotice(undefined); one.reload(); };
  return <PipelineEditor key={`${one.data.id}@${one.data.version}`} pipeline={one.data} canWrite={canWrite} reload={reload} notice={notice} onSaved={(n) => { setNotice(n); one.reload(); }} />;
}

type View = 'form' | 'json';

function PipelineEditor({ pipeline, canWrite, reload, notice, onSaved }: { pipeline: AdminApi.Pipeline; canWrite: boolean; reload: () => void; notice?: string; onSaved: (note: string) => void }) {
  const fields = usePipelineFields();
  const [view, setView] = useState<View>('form');
  const [name, setName] = useState(pipeline.name);
  const [stages, setStages] = useState(pipeline.stages.join('\n'));
  const [config, setConfig] = useState<unknown>(() => withPipelineDefaults(pipeline.config));
  const [rawText, setRawText] = useState<string | null>(null);
  const [rawError, setRawError] = useState<string>();
  const [prefs, setPrefs] = useState(JSON.stringify(pipeline.extensionsPreferences, null, 2));
  const save = useAction();
  const check = useAction();
  const remove = useAction();
  const copy = useAction();
  const [copyId, setCopyId] = useState('');
  const i18n = useI18n();
  const { t } = i18n;

  // The browser's check runs on every edit, with the schema the services use.
  // Recomputed on a language change too: zod words the issues in the chosen language.
  const local = useMemo(() => parsePipelineConfig(config), [config, i18n.locale]);
  const issues = useMemo(() => new Map(local.ok ? [] : local.issues.map((i) => [i.path, i.reason])), [local]);
  const stageList = stages.split('\n').map((s) => s.trim()).filter(Boolean);
  const conflict = save.error instanceof ApiError && save.error.code === 'version_conflict';

  const switchView = (next: View) => {
    if (next === view) return;
    if (next === 'json') {
      setRawText(JSON.stringify(config, null, 2));
      setRawError(undefined);
    } else if (rawText !== null) {
      try {
        setConfig(parseJsonObject(rawText, t('pipelines.configField'), i18n));
      } catch (e) {
        setRawError(e instanceof Error ? e.message : String(e));
        return;
      }
    }
    setView(next);
  };
  const editRaw = (text: string) => {
    setRawText(text);
    try {
      setConfig(parseJsonObject(text, t('pipelines.configField'), i18n));
      setRawError(undefined);
    } catch (e) {
      setRawError(e instanceof Error ? e.message : String(e));
    }
  };

  const body = () => ({
    name: name.trim() || undefined,
    stages: stageList,
    config: parseJsonObject(view === 'json' && rawText !== null ? rawText : JSON.stringify(config), t('pipelines.configField'), i18n),
    extensionsPreferences: parseJsonObject(prefs, t('pipelines.prefsField'), i18n),
  });

  const validate = async () => {
    if (!local.ok) throw new Error(t('pipelines.localProblems', { count: local.issues.length, list: local.issues.map((i) => `${i.path}: ${i.reason}`).join('; ') }));
    const b = body();
    const res = await request('POST', '/pipelines/validate', AdminApi.PipelineValidation, { body: { stages: b.stages, config: b.config } });
    if (!res.valid) throw new Error(t('pipelines.serverProblems', { list: res.issues.map((i) => `${i.path}: ${i.message}`).join('; ') }));
    return b;
  };

  const submit = (e: FormEvent) => {
    e.preventDefault();
    void save.run(async () => {
      const b = await validate();
      await request('PATCH', `/pipelines/${encodeURIComponent(pipeline.id)}`, AdminApi.Pipeline, { body: b, version: pipeline.version });
      onSaved(t('pipelines.savedLive'));
    });
  };

  return (
    <section>
      <PageHeader title={t('pipelines.editTitle', { id: pipeline.id })}>
        <a href={formatRoute({ page: 'chat', params: { pipeline: pipeline.id } })}>{t('pipelines.debugChat')}</a>
        <a href={formatRoute({ page: 'pipelines' })}>{t('pipelines.all')}</a>
      </PageHeader>
      <p className="meta">{t('pipelines.meta', { version: pipeline.version, managedBy: i18n.lookup(`managedBy.${pipeline.managedBy}`) ?? pipeline.managedBy, updated: i18n.dateTime(pipeline.updatedAt), count: pipeline.botIds.length })}</p>
      <form className="form wide" onSubmit={submit} aria-label={t('pipelines.form')}>
        <Field label={t('common.name')} htmlFor="pipeline-name"><input id="pipeline-name" value={name} onChange={(e) => setName(e.target.value)} /></Field>
        <div className="tabs" role="tablist">
          <button type="button" role="tab" aria-selected={view === 'form'} className={view === 'form' ? 'active' : ''} onClick={() => switchView('form')}>{t('pipelines.viewForm')}</button>
          <button type="button" role="tab" aria-selected={view === 'json'} className={view === 'json' ? 'active' : ''} onClick={() => switchView('json')}>{t('pipelines.viewJson')}</button>
        </div>
        {view === 'form'
          ? <ConfigForm root={fields} value={config} onChange={setConfig} issues={issues} disabled={!canWrite} />
          : (
            <Field label={t('pipelines.rawLabel')} htmlFor="pipeline-json">
              <textarea id="pipeline-json" className="mono" translate="no" rows={28} value={rawText ?? ''} disabled={!canWrite} onChange={(e) => editRaw(e.target.value)} spellCheck={false} />
              {rawError ? <div className="field-issue">{rawError}</div> : null}
            </Field>
          )}
        <SkillsBinding prefs={prefs} onChange={setPrefs} disabled={!canWrite} />
        <details>
          <summary>{t('pipelines.stagesAndExtensions')}</summary>
          <Field label={t('pipelines.stages')} htmlFor="pipeline-stages" hint={richText(i18n, 'pipelines.stagesHint', { stages: <Code>{DEFAULT_PIPELINE_STAGES.join(', ')}</Code> })}>
            <textarea id="pipeline-stages" className="mono" translate="no" rows={Math.max(4, stageList.length + 1)} value={stages} disabled={!canWrite} onChange={(e) => setStages(e.target.value)} />
          </Field>
          <Field label={t('pipelines.prefs')} htmlFor="pipeline-prefs">
            <textarea id="pipeline-prefs" className="mono" translate="no" rows={6} value={prefs} disabled={!canWrite} onChange={(e) => setPrefs(e.target.value)} />
          </Field>
        </details>
        <div className={`note ${local.ok ? 'ok' : 'error'}`} id="pipeline-check">
          {local.ok ? t('pipelines.valid') : t('pipelines.problems', { count: local.issues.length, list: local.issues.slice(0, 5).map((i) => `${i.path}: ${i.reason}`).join('; ') })}
        </div>
        <div className="buttons">
          <button type="submit" disabled={!canWrite || save.busy || Boolean(rawError)}>{save.busy ? t('common.saving') : t('common.save')}</button>
          <button type="button" disabled={check.busy || Boolean(rawError)} onClick={() => void check.run(async () => { await validate(); return t('pipelines.validOnServer'); })}>{t('pipelines.validate')}</button>
          {conflict ? <button type="button" onClick={reload}>{t('common.reload')}</button> : null}
        </div>
        <ErrorNote error={save.error ?? check.error} />
        <DoneNote text={save.done ?? check.done ?? (save.error || check.error ? undefined : notice)} />
      </form>
      {canWrite ? (
        <div className="form secondary">
          <h2>{t('pipelines.copyOrDelete')}</h2>
          <div className="buttons">
            <input aria-label={t('pipelines.copyId')} placeholder={t('pipelines.copyId')} value={copyId} onChange={(e) => setCopyId(e.target.value)} />
            <button type="button" disabled={copy.busy || !copyId.trim()} onClick={() => void copy.run(async () => {
              const p = await request('POST', `/pipelines/${encodeURIComponent(pipeline.id)}/copy`, AdminApi.Pipeline, { body: { id: copyId.trim() } });
              location.hash = formatRoute({ page: 'pipelines', id: p.id });
            })}>{t('common.copy')}</button>
            <button type="button" className="danger" disabled={remove.busy} onClick={() => {
              if (!confirm(t('pipelines.deleteConfirm', { id: pipeline.id }))) return;
              void remove.run(async () => {
                await request('DELETE', `/pipelines/${encodeURIComponent(pipeline.id)}`, null, { version: pipeline.version });
                location.hash = formatRoute({ page: 'pipelines' });
              });
            }}>{t('common.delete')}</button>
          </div>
          <ErrorNote error={copy.error ?? remove.error} />
        </div>
      ) : null}
    </section>
  );
}
