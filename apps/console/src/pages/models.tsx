// OpenAI-compatible models: list, create, edit (the API key is write-only), test, delete.
import { useState, type FormEvent } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { listAll, request } from '../lib/api.js';
import { formatRoute, type Route } from '../lib/routes.js';
import { Busy, DoneNote, ErrorNote, Field, PageHeader, fmtTime, parseJsonObject, useAction, useLoad } from '../ui.js';

const ABILITIES = AdminApi.ModelAbility.options;

export function Models({ route, canWrite }: { route: Route; canWrite: boolean }) {
  if (route.id === 'new') return <ModelEditor canWrite={canWrite} />;
  if (route.id) return <ModelLoader id={route.id} canWrite={canWrite} />;
  return <ModelList canWrite={canWrite} />;
}

function ModelList({ canWrite }: { canWrite: boolean }) {
  const list = useLoad((signal) => listAll('/models', AdminApi.Model, { signal }), []);
  return (
    <section>
      <PageHeader title="Models">{canWrite ? <a className="button" href={formatRoute({ page: 'models', id: 'new' })}>New model</a> : null}</PageHeader>
      <ErrorNote error={list.error} />
      <Busy on={list.loading} />
      {list.data ? (
        <table>
          <thead><tr><th>Id</th><th>Name</th><th>Model</th><th>Base URL</th><th>Abilities</th><th>Key</th><th>Updated</th></tr></thead>
          <tbody>
            {list.data.items.map((m) => (
              <tr key={m.id} data-id={m.id}>
                <td><a href={formatRoute({ page: 'models', id: m.id })}>{m.id}</a></td>
                <td>{m.name}</td><td>{m.model}</td><td className="mono">{m.baseUrl}</td><td>{m.abilities.join(', ')}</td>
                <td>{m.apiKey.source === 'env' ? `env:${m.apiKey.env ?? ''}` : m.apiKey.source}</td><td>{fmtTime(m.updatedAt)}</td>
              </tr>
            ))}
            {list.data.items.length === 0 ? <tr><td colSpan={7} className="empty">No models yet.</td></tr> : null}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}

function ModelLoader({ id, canWrite }: { id: string; canWrite: boolean }) {
  const one = useLoad((signal) => request('GET', `/models/${encodeURIComponent(id)}`, AdminApi.Model, { signal }), [id]);
  // Kept here: a saved row comes back with a new version, which remounts the editor.
  const [notice, setNotice] = useState<string>();
  if (one.error) return <ErrorNote error={one.error} />;
  if (!one.data) return <Busy on />;
  return <ModelEditor key={`${one.data.id}@${one.data.version}`} model={one.data} canWrite={canWrite} notice={notice} onSaved={(n) => { setNotice(n); one.reload(); }} />;
}

function ModelEditor({ model, canWrite, notice, onSaved }: { model?: AdminApi.Model; canWrite: boolean; notice?: string; onSaved?: (note: string) => void }) {
  const [id, setId] = useState(model?.id ?? '');
  const [name, setName] = useState(model?.name ?? '');
  const [baseUrl, setBaseUrl] = useState(model?.baseUrl ?? '');
  const [modelName, setModelName] = useState(model?.model ?? '');
  const [abilities, setAbilities] = useState<string[]>(model?.abilities ?? ['func_call']);
  const [timeoutMs, setTimeoutMs] = useState(String(model?.timeoutMs ?? 120000));
  const [extraArgs, setExtraArgs] = useState(JSON.stringify(model?.extraArgs ?? {}, null, 2));
  const [keyMode, setKeyMode] = useState<'keep' | 'key' | 'env' | 'none'>(model ? 'keep' : 'key');
  const [apiKey, setApiKey] = useState('');
  const [apiKeyEnv, setApiKeyEnv] = useState(model?.apiKey.env ?? '');
  const save = useAction();
  const test = useAction();
  const remove = useAction();

  const submit = (e: FormEvent) => {
    e.preventDefault();
    void save.run(async () => {
      const fields = {
        name: name.trim() || undefined,
        baseUrl: baseUrl.trim(),
        model: modelName.trim(),
        abilities,
        timeoutMs: Number(timeoutMs),
        extraArgs: parseJsonObject(extraArgs, 'extra arguments'),
      };
      const key = keyMode === 'key' ? { apiKey } : keyMode === 'env' ? { apiKeyEnv: apiKeyEnv.trim() } : {};
      if (!model) {
        const created = await request('POST', '/models', AdminApi.Model, { body: { id: id.trim(), ...fields, ...key } });
        location.hash = formatRoute({ page: 'models', id: created.id });
        return;
      }
      const clear = keyMode === 'none' ? { apiKey: null, apiKeyEnv: null } : keyMode === 'key' ? { apiKeyEnv: null } : keyMode === 'env' ? { apiKey: null } : {};
      await request('PATCH', `/models/${encodeURIComponent(model.id)}`, AdminApi.Model, { body: { ...fields, ...clear, ...key }, version: model.version });
      onSaved?.('Saved.');
    });
  };

  return (
    <section>
      <PageHeader title={model ? `Model ${model.id}` : 'New model'}>
        <a href={formatRoute({ page: 'models' })}>All models</a>
      </PageHeader>
      <form className="form" onSubmit={submit} aria-label="model">
        {model ? <p className="meta">Version {model.version}, managed by {model.managedBy}, updated {fmtTime(model.updatedAt)}</p> : (
          <Field label="Id" htmlFor="model-id" hint="Pipelines name the model by this id.">
            <input id="model-id" value={id} onChange={(e) => setId(e.target.value)} required />
          </Field>
        )}
        <Field label="Name" htmlFor="model-name"><input id="model-name" value={name} onChange={(e) => setName(e.target.value)} /></Field>
        <Field label="Base URL" htmlFor="model-base-url" hint="OpenAI-compatible, e.g. https://api.openai.com/v1">
          <input id="model-base-url" value={baseUrl} onChange={(e) => setBaseUrl(e.target.value)} required />
        </Field>
        <Field label="Provider's model name" htmlFor="model-model"><input id="model-model" value={modelName} onChange={(e) => setModelName(e.target.value)} required /></Field>
        <fieldset>
          <legend>Abilities</legend>
          {ABILITIES.map((a) => (
            <label key={a} className="inline">
              <input type="checkbox" checked={abilities.includes(a)} onChange={(e) => setAbilities(e.target.checked ? [...abilities, a] : abilities.filter((x) => x !== a))} /> {a}
            </label>
          ))}
        </fieldset>
        <Field label="Timeout (ms)" htmlFor="model-timeout"><input id="model-timeout" type="number" min={1} value={timeoutMs} onChange={(e) => setTimeoutMs(e.target.value)} /></Field>
        <fieldset>
          <legend>API key {model ? `(now: ${model.apiKey.source === 'env' ? `env:${model.apiKey.env ?? ''}` : model.apiKey.source})` : ''}</legend>
          <select id="model-key-mode" aria-label="API key source" value={keyMode} onChange={(e) => setKeyMode(e.target.value === 'keep' || e.target.value === 'env' || e.target.value === 'none' ? e.target.value : 'key')}>
            {model ? <option value="keep">Keep the current key</option> : null}
            <option value="key">Enter the key (stored encrypted)</option>
            <option value="env">Read it from an environment variable</option>
            <option value="none">No key</option>
          </select>
          {keyMode === 'key' ? <input id="model-api-key" type="password" autoComplete="off" placeholder="sk-…" value={apiKey} onChange={(e) => setApiKey(e.target.value)} aria-label="API key" /> : null}
          {keyMode === 'env' ? <input id="model-api-key-env" placeholder="OPENAI_API_KEY" value={apiKeyEnv} onChange={(e) => setApiKeyEnv(e.target.value)} aria-label="API key variable" /> : null}
        </fieldset>
        <Field label="Extra arguments (JSON)" htmlFor="model-extra" hint="Added to every request, e.g. {&quot;temperature&quot;: 0.2}">
          <textarea id="model-extra" rows={3} className="mono" value={extraArgs} onChange={(e) => setExtraArgs(e.target.value)} />
        </Field>
        <div className="buttons">
          <button type="submit" disabled={!canWrite || save.busy}>{save.busy ? 'Saving…' : model ? 'Save' : 'Create model'}</button>
          {model && canWrite ? (
            <>
              <button type="button" disabled={test.busy} onClick={() => void test.run(async () => {
                const r = await request('POST', `/models/${encodeURIComponent(model.id)}/test`, AdminApi.ModelTestResult);
                if (!r.ok) throw new Error(`Test failed after ${Math.round(r.latencyMs)} ms: ${r.error ?? 'no answer'}`);
                return `Answered in ${Math.round(r.latencyMs)} ms${r.sample ? `: “${r.sample}”` : ''}.`;
              })}>{test.busy ? 'Testing…' : 'Test'}</button>
              <button type="button" className="danger" disabled={remove.busy} onClick={() => {
                if (!confirm(`Delete model ${model.id}?`)) return;
                void remove.run(async () => {
                  await request('DELETE', `/models/${encodeURIComponent(model.id)}`, null, { version: model.version });
                  location.hash = formatRoute({ page: 'models' });
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
