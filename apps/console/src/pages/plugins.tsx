// Plugins: what their heartbeats announce (name, version, events, tools, commands), when each last beat,
// the pipelines whose extensions preferences bind it and the last hour's calls (cluster-wide); a plugin that declares settings has a page with a
// form built from its JSON Schema, for the installation and for each pipeline binding it.
import { useState, type FormEvent } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { request } from '../lib/api.js';
import { formatRoute, type Route } from '../lib/routes.js';
import { Busy, DoneNote, ErrorNote, Field, PageHeader, useAction, useLoad } from '../ui.js';
import { useI18n } from '../i18n/react.js';

export function Plugins({ route, canWrite }: { route: Route; canWrite: boolean }) {
  return route.id ? <PluginSettingsView name={route.id} canWrite={canWrite} /> : <PluginList />;
}

function PluginList() {
  const list = useLoad((signal) => request('GET', '/plugins', AdminApi.PluginList, { signal }), []);
  const { t, dateTime } = useI18n();
  return (
    <section>
      <PageHeader title={t('plugins.title')}><button onClick={list.reload} disabled={list.loading}>{t('common.refresh')}</button></PageHeader>
      <p className="hint">{t('plugins.hint')}</p>
      <ErrorNote error={list.error} />
      <Busy on={list.loading} />
      {list.data ? (
        <table>
          <thead><tr><th>{t('common.name')}</th><th>{t('plugins.version')}</th><th>{t('plugins.events')}</th><th>{t('plugins.tools')}</th><th>{t('plugins.priority')}</th><th>{t('plugins.lastHeartbeat')}</th><th>{t('plugins.pipelines')}</th><th>{t('plugins.lastHour')}</th><th>{t('plugins.settings')}</th></tr></thead>
          <tbody>
            {list.data.items.map((p) => (
              <tr key={p.name} data-name={p.name}>
                <td className="breakable" translate="no">{p.name}</td>
                <td>{p.version === null ? t('plugins.noVersion') : <span translate="no">{p.version}</span>}</td>
                <td className="mono breakable" translate="no">{p.events.join(', ')}</td>
                <td className="mono breakable" translate="no">{[...p.tools, ...p.commands.map((c) => `!${c}`), ...p.retrievers.map((r) => `retriever:${r}`)].join(', ')}</td>
                <td>{p.priority}</td>
                <td>{dateTime(p.lastHeartbeatAt)}</td>
                <td translate="no">{p.pipelines.map((id, i) => <span key={id}>{i ? ', ' : ''}<a href={formatRoute({ page: 'pipelines', id })}>{id}</a></span>)}</td>
                <td className="last-hour">{t('plugins.lastHourValue', { calls: p.lastHour.calls, errors: p.lastHour.errors, mean: p.lastHour.meanMs === null ? '—' : t('plugins.ms', { n: p.lastHour.meanMs }) })}</td>
                <td>{p.hasSettings ? <a href={formatRoute({ page: 'plugins', id: p.name })}>{t('plugins.edit')}</a> : null}</td>
              </tr>
            ))}
            {list.data.items.length === 0 ? <tr><td colSpan={9} className="empty">{t('plugins.empty')}</td></tr> : null}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}

/** One property of a settings schema, as much of it as the form uses. */
interface Property {
  type?: string;
  title?: string;
  description?: string;
  enum?: unknown[];
  writeOnly?: boolean;
  format?: string;
}

const propertiesOf = (schema: Record<string, unknown>): Array<[string, Property]> =>
  schema.properties && typeof schema.properties === 'object' ? Object.entries(schema.properties as Record<string, Property>) : [];

/** A field's text as the form holds it; '' is "not set" (for a pipeline: the installation's value applies). */
const asText = (value: unknown) => (value === undefined || value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value));

/** The form's text back as the property's type; undefined when empty (the key is left out). */
function fromText(text: string, property: Property): unknown {
  if (text === '') return undefined;
  if (property.type === 'integer' || property.type === 'number') return Number.isFinite(Number(text)) ? Number(text) : text;
  if (property.type === 'boolean') return text === 'true';
  if (property.type === 'string' || property.enum) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function PluginSettingsView({ name, canWrite }: { name: string; canWrite: boolean }) {
  const path = `/plugins/${encodeURIComponent(name)}/settings`;
  const loaded = useLoad((signal) => request('GET', path, AdminApi.PluginSettings, { signal }), [name]);
  const [scope, setScope] = useState<string>('');
  const { t } = useI18n();
  if (loaded.error) return <ErrorNote error={loaded.error} />;
  if (!loaded.data) return <Busy on />;
  const data = loaded.data;
  const pipelineId = scope === '' ? null : scope;
  const current = data.scopes.find((s) => s.pipelineId === pipelineId);
  return (
    <section>
      <PageHeader title={t('plugins.settingsTitle', { name })}><a href={formatRoute({ page: 'plugins' })}>{t('plugins.all')}</a></PageHeader>
      <p className="hint">{t('plugins.settingsHint')}</p>
      <Field label={t('plugins.scope')} htmlFor="plugin-scope">
        <select id="plugin-scope" value={scope} onChange={(e) => setScope(e.target.value)}>
          <option value="">{t('plugins.scopeInstallation')}</option>
          {data.pipelines.map((id) => <option key={id} value={id} translate="no">{t('plugins.scopePipeline', { id })}</option>)}
        </select>
      </Field>
      <SettingsForm key={scope} path={path} schema={data.schema} pipelineId={pipelineId} current={current} canWrite={canWrite} onSaved={loaded.reload} />
    </section>
  );
}

function SettingsForm({ path, schema, pipelineId, current, canWrite, onSaved }: { path: string; schema: Record<string, unknown>; pipelineId: string | null; current: AdminApi.PluginSettingsScope | undefined; canWrite: boolean; onSaved: () => void }) {
  const properties = propertiesOf(schema);
  const [texts, setTexts] = useState<Record<string, string>>(() => Object.fromEntries(properties.map(([key]) => [key, asText(current?.values[key])])));
  const save = useAction();
  const { t } = useI18n();
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((k): k is string => typeof k === 'string') : []);

  const submit = (e: FormEvent) => {
    e.preventDefault();
    void save.run(async () => {
      const values = Object.fromEntries(properties.map(([key, p]) => [key, fromText(texts[key] ?? '', p)]).filter(([, v]) => v !== undefined));
      const saved = await request('PUT', path, AdminApi.PluginSettings, { body: { pipelineId, values, version: current?.version ?? 0 } });
      // What was stored, secrets masked again; the page reloads for the new version.
      const stored = saved.scopes.find((s) => s.pipelineId === pipelineId);
      setTexts(Object.fromEntries(properties.map(([key]) => [key, asText(stored?.values[key])])));
      onSaved();
      return t('plugins.settingsSaved');
    });
  };

  return (
    <form className="form" onSubmit={submit} aria-label={t('plugins.settingsForm')}>
      {properties.map(([key, p]) => {
        const id = `plugin-setting-${key}`;
        const secret = p.writeOnly === true || p.format === 'password';
        const label = `${p.title ?? key}${required.has(key) && pipelineId === null ? ' *' : ''}`;
        const set = (value: string) => setTexts((all) => ({ ...all, [key]: value }));
        const value = texts[key] ?? '';
        return (
          <Field key={key} label={label} htmlFor={id} hint={secret ? t('plugins.secretHint') : p.description}>
            {p.enum ? (
              <select id={id} value={value} onChange={(e) => set(e.target.value)}>
                <option value="">{pipelineId === null ? t('plugins.unset') : t('plugins.inherit')}</option>
                {p.enum.map((option) => <option key={String(option)} value={asText(option)} translate="no">{String(option)}</option>)}
              </select>
            ) : p.type === 'boolean' ? (
              <select id={id} value={value} onChange={(e) => set(e.target.value)}>
                <option value="">{pipelineId === null ? t('plugins.unset') : t('plugins.inherit')}</option>
                <option value="true">{t('plugins.yes')}</option>
                <option value="false">{t('plugins.no')}</option>
              </select>
            ) : (
              <input id={id} type={secret ? 'password' : 'text'} autoComplete="off" inputMode={p.type === 'integer' || p.type === 'number' ? 'numeric' : undefined} value={value} onChange={(e) => set(e.target.value)} />
            )}
          </Field>
        );
      })}
      <div className="buttons"><button type="submit" disabled={!canWrite || save.busy}>{save.busy ? t('common.saving') : t('common.save')}</button></div>
      <ErrorNote error={save.error} />
      <DoneNote text={save.done} />
    </form>
  );
}
