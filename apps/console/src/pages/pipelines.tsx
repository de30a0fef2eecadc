// Pipelines: LangBot's config as a form generated from its schema, or as raw JSON; checked before
// saving (in the browser with the same schema the services use, then by the admin service).
import { useMemo, useState, type FormEvent } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { DEFAULT_PIPELINE_STAGES, parsePipelineConfig, withPipelineDefaults } from '@conveyor/pipeline/config';
import { ApiError, listAll, request } from '../lib/api.js';
import { formatRoute, type Route } from '../lib/routes.js';
import { isRecord } from '../lib/schema-form.js';
import { ConfigForm, usePipelineFields } from '../pipeline-form.js';
import { Busy, DoneNote, ErrorNote, Field, PageHeader, fmtTime, parseJsonObject, useAction, useLoad } from '../ui.js';

export function Pipelines({ route, canWrite }: { route: Route; canWrite: boolean }) {
  if (route.id === 'new') return <NewPipeline canWrite={canWrite} />;
  if (route.id) return <PipelineLoader id={route.id} canWrite={canWrite} />;
  return <PipelineList canWrite={canWrite} />;
}

function PipelineList({ canWrite }: { canWrite: boolean }) {
  const list = useLoad((signal) => listAll('/pipelines', AdminApi.Pipeline, { signal }), []);
  return (
    <section>
      <PageHeader title="Pipelines">{canWrite ? <a className="button" href={formatRoute({ page: 'pipelines', id: 'new' })}>New pipeline</a> : null}</PageHeader>
      <ErrorNote error={list.error} />
      <Busy on={list.loading} />
      {list.data ? (
        <table>
          <thead><tr><th>Id</th><th>Name</th><th>Runner</th><th>Bots</th><th>Managed by</th><th>Updated</th><th></th></tr></thead>
          <tbody>
            {list.data.items.map((p) => (
              <tr key={p.id} data-id={p.id}>
                <td><a href={formatRoute({ page: 'pipelines', id: p.id })}>{p.id}</a></td>
                <td>{p.name}</td>
                <td>{runnerOf(p.config)}</td>
                <td>{p.botIds.length}</td>
                <td>{p.managedBy}</td>
                <td>{fmtTime(p.updatedAt)}</td>
                <td><a href={formatRoute({ page: 'chat', params: { pipeline: p.id } })}>Debug chat</a></td>
              </tr>
            ))}
            {list.data.items.length === 0 ? <tr><td colSpan={7} className="empty">No pipelines yet.</td></tr> : null}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}

function runnerOf(config: Record<string, unknown>): string {
  const ai = config.ai;
  const runner = isRecord(ai) && isRecord(ai.runner) ? ai.runner.runner : undefined;
  return typeof runner === 'string' ? runner : '—';
}

function NewPipeline({ canWrite }: { canWrite: boolean }) {
  const [id, setId] = useState('');
  const [name, setName] = useState('');
  const create = useAction();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void create.run(async () => {
      const p = await request('POST', '/pipelines', AdminApi.Pipeline, { body: { id: id.trim(), name: name.trim() || undefined, config: {} } });
      location.hash = formatRoute({ page: 'pipelines', id: p.id });
    });
  };
  return (
    <section>
      <PageHeader title="New pipeline"><a href={formatRoute({ page: 'pipelines' })}>All pipelines</a></PageHeader>
      <form className="form" onSubmit={submit} aria-label="new pipeline">
        <p>A new pipeline starts with LangBot's default stages and config; edit it after creating.</p>
        <Field label="Id" htmlFor="pipeline-id"><input id="pipeline-id" value={id} onChange={(e) => setId(e.target.value)} required /></Field>
        <Field label="Name" htmlFor="pipeline-name"><input id="pipeline-name" value={name} onChange={(e) => setName(e.target.value)} /></Field>
        <button type="submit" disabled={!canWrite || create.busy}>{create.busy ? 'Creating…' : 'Create pipeline'}</button>
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

  // The browser's check runs on every edit, with the schema the services use.
  const local = useMemo(() => parsePipelineConfig(config), [config]);
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
        setConfig(parseJsonObject(rawText, 'the config'));
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
      setConfig(parseJsonObject(text, 'the config'));
      setRawError(undefined);
    } catch (e) {
      setRawError(e instanceof Error ? e.message : String(e));
    }
  };

  const body = () => ({
    name: name.trim() || undefined,
    stages: stageList,
    config: parseJsonObject(view === 'json' && rawText !== null ? rawText : JSON.stringify(config), 'the config'),
    extensionsPreferences: parseJsonObject(prefs, 'extensions preferences'),
  });

  const validate = async () => {
    if (!local.ok) throw new Error(`The config has ${local.issues.length} problem(s): ${local.issues.map((i) => `${i.path}: ${i.reason}`).join('; ')}`);
    const b = body();
    const res = await request('POST', '/pipelines/validate', AdminApi.PipelineValidation, { body: { stages: b.stages, config: b.config } });
    if (!res.valid) throw new Error(`The admin service found problems: ${res.issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`);
    return b;
  };

  const submit = (e: FormEvent) => {
    e.preventDefault();
    void save.run(async () => {
      const b = await validate();
      await request('PATCH', `/pipelines/${encodeURIComponent(pipeline.id)}`, AdminApi.Pipeline, { body: b, version: pipeline.version });
      onSaved('Saved. Services pick the change up without a restart.');
    });
  };

  return (
    <section>
      <PageHeader title={`Pipeline ${pipeline.id}`}>
        <a href={formatRoute({ page: 'chat', params: { pipeline: pipeline.id } })}>Debug chat</a>
        <a href={formatRoute({ page: 'pipelines' })}>All pipelines</a>
      </PageHeader>
      <p className="meta">Version {pipeline.version}, managed by {pipeline.managedBy}, updated {fmtTime(pipeline.updatedAt)}; used by {pipeline.botIds.length} bot(s).</p>
      <form className="form wide" onSubmit={submit} aria-label="pipeline">
        <Field label="Name" htmlFor="pipeline-name"><input id="pipeline-name" value={name} onChange={(e) => setName(e.target.value)} /></Field>
        <div className="tabs" role="tablist">
          <button type="button" role="tab" aria-selected={view === 'form'} className={view === 'form' ? 'active' : ''} onClick={() => switchView('form')}>Form</button>
          <button type="button" role="tab" aria-selected={view === 'json'} className={view === 'json' ? 'active' : ''} onClick={() => switchView('json')}>Raw JSON</button>
        </div>
        {view === 'form'
          ? <ConfigForm root={fields} value={config} onChange={setConfig} issues={issues} disabled={!canWrite} />
          : (
            <Field label="Config (LangBot's JSON; defaults fill what is left out)" htmlFor="pipeline-json">
              <textarea id="pipeline-json" className="mono" rows={28} value={rawText ?? ''} disabled={!canWrite} onChange={(e) => editRaw(e.target.value)} spellCheck={false} />
              {rawError ? <div className="field-issue">{rawError}</div> : null}
            </Field>
          )}
        <details>
          <summary>Stages and extensions</summary>
          <Field label="Stages, in order" htmlFor="pipeline-stages" hint={`LangBot's default: ${DEFAULT_PIPELINE_STAGES.join(', ')}`}>
            <textarea id="pipeline-stages" className="mono" rows={Math.max(4, stageList.length + 1)} value={stages} disabled={!canWrite} onChange={(e) => setStages(e.target.value)} />
          </Field>
          <Field label="Extensions preferences (JSON)" htmlFor="pipeline-prefs">
            <textarea id="pipeline-prefs" className="mono" rows={6} value={prefs} disabled={!canWrite} onChange={(e) => setPrefs(e.target.value)} />
          </Field>
        </details>
        <div className={`note ${local.ok ? 'ok' : 'error'}`} id="pipeline-check">
          {local.ok ? 'The config is valid.' : `${local.issues.length} problem(s): ${local.issues.slice(0, 5).map((i) => `${i.path}: ${i.reason}`).join('; ')}`}
        </div>
        <div className="buttons">
          <button type="submit" disabled={!canWrite || save.busy || Boolean(rawError)}>{save.busy ? 'Saving…' : 'Save'}</button>
          <button type="button" disabled={check.busy || Boolean(rawError)} onClick={() => void check.run(async () => { await validate(); return 'Valid: the admin service accepts this config.'; })}>Validate</button>
          {conflict ? <button type="button" onClick={reload}>Reload</button> : null}
        </div>
        <ErrorNote error={save.error ?? check.error} />
        <DoneNote text={save.done ?? check.done ?? (save.error || check.error ? undefined : notice)} />
      </form>
      {canWrite ? (
        <div className="form secondary">
          <h2>Copy or delete</h2>
          <div className="buttons">
            <input aria-label="id of the copy" placeholder="id of the copy" value={copyId} onChange={(e) => setCopyId(e.target.value)} />
            <button type="button" disabled={copy.busy || !copyId.trim()} onClick={() => void copy.run(async () => {
              const p = await request('POST', `/pipelines/${encodeURIComponent(pipeline.id)}/copy`, AdminApi.Pipeline, { body: { id: copyId.trim() } });
              location.hash = formatRoute({ page: 'pipelines', id: p.id });
            })}>Copy</button>
            <button type="button" className="danger" disabled={remove.busy} onClick={() => {
              if (!confirm(`Delete pipeline ${pipeline.id}?`)) return;
              void remove.run(async () => {
                await request('DELETE', `/pipelines/${encodeURIComponent(pipeline.id)}`, null, { version: pipeline.version });
                location.hash = formatRoute({ page: 'pipelines' });
              });
            }}>Delete</button>
          </div>
          <ErrorNote error={copy.error ?? remove.error} />
        </div>
      ) : null}
    </section>
  );
}
