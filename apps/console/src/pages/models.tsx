// Models (OpenAI-compatible or a native API): list, create (from a preset), edit (the API key is write-only), test, delete.
import { useState, type FormEvent } from 'react';
import { AdminApi, ModelProviderKind } from '@conveyor/contracts';
import { listAll, request } from '../lib/api.js';
import { formatRoute, type Route } from '../lib/routes.js';
import { Busy, DoneNote, ErrorNote, Field, PageHeader, parseJsonObject, useAction, useLoad } from '../ui.js';
import type { Translator } from '../i18n/i18n.js';
import { Code, richText, useI18n } from '../i18n/react.js';

const ABILITIES = AdminApi.ModelAbility.options;
const PROVIDERS = ModelProviderKind.options;

/** Where a model's key comes from, as the list and the editor show it. */
function keySource({ t }: Pick<Translator, 't'>, key: AdminApi.Model['apiKey']): string {
  return key.source === 'env' ? t('keySource.env', { name: key.env ?? '' }) : t(`keySource.${key.source}`);
}

export function Models({ route, canWrite }: { route: Route; canWrite: boolean }) {
  if (route.id === 'new') return <ModelEditor canWrite={canWrite} />;
  if (route.id) return <ModelLoader id={route.id} canWrite={canWrite} />;
  return <ModelList canWrite={canWrite} />;
}

function ModelList({ canWrite }: { canWrite: boolean }) {
  const list = useLoad((signal) => listAll('/models', AdminApi.Model, { signal }), []);
  const i18n = useI18n();
  const { t } = i18n;
  return (
    <section>
      <PageHeader title={t('models.title')}>{canWrite ? <a className="button" href={formatRoute({ page: 'models', id: 'new' })}>{t('models.new')}</a> : null}</PageHeader>
      <ErrorNote error={list.error} />
      <Busy on={list.loading} />
      {list.data ? (
        <table>
          <thead><tr><th>{t('common.id')}</th><th>{t('common.name')}</th><th>{t('models.model')}</th><th>{t('models.provider')}</th><th>{t('models.baseUrl')}</th><th>{t('models.abilities')}</th><th>{t('models.key')}</th><th>{t('common.updated')}</th></tr></thead>
          <tbody>
            {list.data.items.map((m) => (
              <tr key={m.id} data-id={m.id}>
                <td className="breakable" translate="no"><a href={formatRoute({ page: 'models', id: m.id })}>{m.id}</a></td>
                <td className="breakable" translate="no">{m.name}</td><td className="breakable" translate="no">{m.model}</td><td>{t(`provider.${m.provider}`)}</td><td className="mono breakable" translate="no">{m.baseUrl}</td><td>{m.abilities.map((a) => t(`ability.${a}`)).join(', ')}</td>
                <td>{keySource(i18n, m.apiKey)}</td><td>{i18n.dateTime(m.updatedAt)}</td>
              </tr>
            ))}
            {list.data.items.length === 0 ? <tr><td colSpan={8} className="empty">{t('models.empty')}</td></tr> : null}
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
  const [provider, setProvider] = useState<ModelProviderKind>(model?.provider ?? 'openai');
  const [preset, setPreset] = useState('');
  // Only a new model picks a preset; it fills the fields, which stay editable.
  const presets = useLoad((signal) => (model ? Promise.resolve(null) : request('GET', '/model-presets', AdminApi.ModelPresetList, { signal })), [model?.id]);
  const choosePreset = (id: string) => {
    setPreset(id);
    const p = presets.data?.items.find((x) => x.id === id);
    if (!p) return;
    setProvider(p.provider);
    setBaseUrl(p.baseUrl);
    setAbilities([...p.abilities]);
  };
  const [modelName, setModelName] = useState(model?.model ?? '');
  const [abilities, setAbilities] = useState<string[]>(model?.abilities ?? ['func_call']);
  const [timeoutMs, setTimeoutMs] = useState(String(model?.timeoutMs ?? 120000));
  const [inputPrice, setInputPrice] = useState(model?.inputPricePerMTok === null || model?.inputPricePerMTok === undefined ? '' : String(model.inputPricePerMTok));
  const [outputPrice, setOutputPrice] = useState(model?.outputPricePerMTok === null || model?.outputPricePerMTok === undefined ? '' : String(model.outputPricePerMTok));
  const [extraArgs, setExtraArgs] = useState(JSON.stringify(model?.extraArgs ?? {}, null, 2));
  const [keyMode, setKeyMode] = useState<'keep' | 'key' | 'env' | 'none'>(model ? 'keep' : 'key');
  const [apiKey, setApiKey] = useState('');
  const [apiKeyEnv, setApiKeyEnv] = useState(model?.apiKey.env ?? '');
  const save = useAction();
  const test = useAction();
  const remove = useAction();
  const i18n = useI18n();
  const { t } = i18n;

  const submit = (e: FormEvent) => {
    e.preventDefault();
    void save.run(async () => {
      const fields = {
        name: name.trim() || undefined,
        provider,
        baseUrl: baseUrl.trim(),
        model: modelName.trim(),
        abilities,
        timeoutMs: Number(timeoutMs),
        extraArgs: parseJsonObject(extraArgs, t('models.extraField'), i18n),
        // Empty: no price (the calls of this model have no cost).
        inputPricePerMTok: inputPrice.trim() === '' ? null : Number(inputPrice),
        outputPricePerMTok: outputPrice.trim() === '' ? null : Number(outputPrice),
      };
      const key = keyMode === 'key' ? { apiKey } : keyMode === 'env' ? { apiKeyEnv: apiKeyEnv.trim() } : {};
      if (!model) {
        const created = await request('POST', '/models', AdminApi.Model, { body: { id: id.trim(), ...fields, ...key } });
        location.hash = formatRoute({ page: 'models', id: created.id });
        return;
      }
      const clear = keyMode === 'none' ? { apiKey: null, apiKeyEnv: null } : keyMode === 'key' ? { apiKeyEnv: null } : keyMode === 'env' ? { apiKey: null } : {};
      await request('PATCH', `/models/${encodeURIComponent(model.id)}`, AdminApi.Model, { body: { ...fields, ...clear, ...key }, version: model.version });
      onSaved?.(t('common.saved'));
    });
  };

  return (
    <section>
      <PageHeader title={model ? t('models.editTitle', { id: model.id }) : t('models.new')}>
        <a href={formatRoute({ page: 'models' })}>{t('models.all')}</a>
      </PageHeader>
      <form className="form" onSubmit={submit} aria-label={t('models.form')}>
        {model ? <p className="meta">{t('common.meta', { version: model.version, managedBy: i18n.lookup(`managedBy.${model.managedBy}`) ?? model.managedBy, updated: i18n.dateTime(model.updatedAt) })}</p> : (
          <Field label={t('common.id')} htmlFor="model-id" hint={t('models.idHint')}>
            <input id="model-id" value={id} onChange={(e) => setId(e.target.value)} required />
          </Field>
        )}
        <Field label={t('common.name')} htmlFor="model-name"><input id="model-name" value={name} onChange={(e) => setName(e.target.value)} /></Field>
        {!model && presets.data ? (
          <Field label={t('models.preset')} htmlFor="model-preset" hint={t('models.presetHint')}>
            <select id="model-preset" value={preset} onChange={(e) => choosePreset(e.target.value)}>
              <option value="">{t('models.presetNone')}</option>
              {presets.data.items.map((p) => <option key={p.id} value={p.id} translate="no">{p.name}</option>)}
            </select>
          </Field>
        ) : null}
        <Field label={t('models.provider')} htmlFor="model-provider">
          <select id="model-provider" value={provider} onChange={(e) => setProvider(PROVIDERS.find((k) => k === e.target.value) ?? 'openai')}>
            {PROVIDERS.map((k) => <option key={k} value={k}>{t(`provider.${k}`)}</option>)}
          </select>
        </Field>
        <Field label={t('models.baseUrl')} htmlFor="model-base-url" hint={t('models.baseUrlHint')}>
          <input id="model-base-url" value={baseUrl} onChange={(e) => setBaseUrl(e.target.value)} required />
        </Field>
        <Field label={t('models.providerModel')} htmlFor="model-model"><input id="model-model" value={modelName} onChange={(e) => setModelName(e.target.value)} required /></Field>
        <fieldset>
          <legend>{t('models.abilities')}</legend>
          {ABILITIES.map((a) => (
            <label key={a} className="inline">
              <input type="checkbox" checked={abilities.includes(a)} onChange={(e) => setAbilities(e.target.checked ? [...abilities, a] : abilities.filter((x) => x !== a))} /> {t(`ability.${a}`)}
            </label>
          ))}
        </fieldset>
        <Field label={t('models.timeout')} htmlFor="model-timeout"><input id="model-timeout" type="number" min={1} value={timeoutMs} onChange={(e) => setTimeoutMs(e.target.value)} /></Field>
        <Field label={t('models.inputPrice')} htmlFor="model-input-price" hint={t('models.priceHint')}><input id="model-input-price" type="number" min={0} step="any" value={inputPrice} onChange={(e) => setInputPrice(e.target.value)} /></Field>
        <Field label={t('models.outputPrice')} htmlFor="model-output-price" hint={t('models.priceHint')}><input id="model-output-price" type="number" min={0} step="any" value={outputPrice} onChange={(e) => setOutputPrice(e.target.value)} /></Field>
        <fieldset>
          <legend>{model ? t('models.apiKeyNow', { source: keySource(i18n, model.apiKey) }) : t('models.apiKey')}</legend>
          <select id="model-key-mode" aria-label={t('models.keySourceLabel')} value={keyMode} onChange={(e) => setKeyMode(e.target.value === 'keep' || e.target.value === 'env' || e.target.value === 'none' ? e.target.value : 'key')}>
            {model ? <option value="keep">{t('models.keyKeep')}</option> : null}
            <option value="key">{t('models.keyEnter')}</option>
            <option value="env">{t('models.keyEnv')}</option>
            <option value="none">{t('models.keyNone')}</option>
          </select>
          {keyMode === 'key' ? <input id="model-api-key" type="password" autoComplete="off" placeholder="sk-…" value={apiKey} onChange={(e) => setApiKey(e.target.value)} aria-label={t('models.apiKey')} /> : null}
          {keyMode === 'env' ? <input id="model-api-key-env" placeholder="OPENAI_API_KEY" value={apiKeyEnv} onChange={(e) => setApiKeyEnv(e.target.value)} aria-label={t('models.keyVariable')} /> : null}
        </fieldset>
        <Field label={t('models.extra')} htmlFor="model-extra" hint={richText(i18n, 'models.extraHint', { example: <Code>{'{"temperature": 0.2}'}</Code> })}>
          <textarea id="model-extra" rows={3} className="mono" value={extraArgs} onChange={(e) => setExtraArgs(e.target.value)} />
        </Field>
        <div className="buttons">
          <button type="submit" disabled={!canWrite || save.busy}>{save.busy ? t('common.saving') : model ? t('common.save') : t('models.create')}</button>
          {model && canWrite ? (
            <>
              <button type="button" disabled={test.busy} onClick={() => void test.run(async () => {
                const r = await request('POST', `/models/${encodeURIComponent(model.id)}/test`, AdminApi.ModelTestResult);
                if (!r.ok) throw new Error(t('common.testFailed', { ms: Math.round(r.latencyMs), error: r.error ?? t('common.noAnswer') }));
                return r.sample ? t('models.answeredSample', { ms: Math.round(r.latencyMs), sample: r.sample }) : t('models.answered', { ms: Math.round(r.latencyMs) });
              })}>{test.busy ? t('common.testing') : t('common.test')}</button>
              <button type="button" className="danger" disabled={remove.busy} onClick={() => {
                if (!confirm(t('models.deleteConfirm', { id: model.id }))) return;
                void remove.run(async () => {
                  await request('DELETE', `/models/${encodeURIComponent(model.id)}`, null, { version: model.version });
                  location.hash = formatRoute({ page: 'models' });
                });
              }}>{t('common.delete')}</button>
            </>
          ) : null}
        </div>
        <ErrorNote error={save.error ?? test.error ?? remove.error} />
        <DoneNote text={save.done ?? test.done ?? (save.error ? undefined : notice)} />
      </form>
    </section>
  );
}
