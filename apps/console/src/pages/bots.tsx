// Bots: which platform adapter, its settings (secrets come back masked; sent back unchanged, they are
// kept), the pipeline it routes to, on or off.
import { useState, type FormEvent } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { listAll, request } from '../lib/api.js';
import { formatRoute, type Route } from '../lib/routes.js';
import { Busy, DoneNote, ErrorNote, Field, PageHeader, fmtTime, parseJsonObject, useAction, useLoad } from '../ui.js';

/**
 * A starting point for the settings of the adapters whose keys the console knows (the keys
 * `conveyor.yaml` uses); any other adapter the server offers starts from an empty object.
 */
const TEMPLATES: Partial<Record<string, Record<string, unknown>>> = {
  'http-bot': { inbound_secret: '', callback_url: 'https://example.com/callback' },
  telegram: { token: '', webhook_secret: '', bot_username: '', 'enable-stream-reply': true },
};

const template = (adapter: string) => TEMPLATES[adapter] ?? {};

export function Bots({ route, canWrite }: { route: Route; canWrite: boolean }) {
  if (route.id === 'new') return <BotEditor canWrite={canWrite} />;
  if (route.id) return <BotLoader id={route.id} canWrite={canWrite} />;
  return <BotList canWrite={canWrite} />;
}

function BotList({ canWrite }: { canWrite: boolean }) {
  const list = useLoad((signal) => listAll('/bots', AdminApi.Bot, { signal }), []);
  return (
    <section>
      <PageHeader title="Bots">{canWrite ? <a className="button" href={formatRoute({ page: 'bots', id: 'new' })}>New bot</a> : null}</PageHeader>
      <ErrorNote error={list.error} />
      <Busy on={list.loading} />
      {list.data ? (
        <table>
          <thead><tr><th>Name</th><th>Adapter</th><th>Pipeline</th><th>Enabled</th><th>Id</th><th>Updated</th></tr></thead>
          <tbody>
            {list.data.items.map((b) => (
              <tr key={b.id} data-id={b.id}>
                <td><a href={formatRoute({ page: 'bots', id: b.id })}>{b.name}</a></td>
                <td>{b.adapter}</td>
                <td><a href={formatRoute({ page: 'pipelines', id: b.pipelineId })}>{b.pipelineId}</a></td>
                <td>{b.enabled ? 'yes' : 'no'}</td>
                <td className="mono">{b.id}</td>
                <td>{fmtTime(b.updatedAt)}</td>
              </tr>
            ))}
            {list.data.items.length === 0 ? <tr><td colSpan={6} className="empty">No bots yet.</td></tr> : null}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}

function BotLoader({ id, canWrite }: { id: string; canWrite: boolean }) {
  const one = useLoad((signal) => request('GET', `/bots/${encodeURIComponent(id)}`, AdminApi.Bot, { signal }), [id]);
  // Kept here: a saved row comes back with a new version, which remounts the editor.
  const [notice, setNotice] = useState<string>();
  if (one.error) return <ErrorNote error={one.error} />;
  if (!one.data) return <Busy on />;
  return <BotEditor key={`${one.data.id}@${one.data.version}`} bot={one.data} canWrite={canWrite} notice={notice} onSaved={(n) => { setNotice(n); one.reload(); }} />;
}

function BotEditor({ bot, canWrite, notice, onSaved }: { bot?: AdminApi.Bot; canWrite: boolean; notice?: string; onSaved?: (note: string) => void }) {
  const pipelines = useLoad((signal) => listAll('/pipelines', AdminApi.Pipeline, { signal }), []);
  // The adapters come from the server's platform registry; a bot's own is listed even if it is gone.
  const offered = useLoad((signal) => request('GET', '/platforms', AdminApi.PlatformList, { signal }), []);
  const adapters = [...new Set([...(offered.data?.items.map((p) => p.name) ?? ['http-bot']), ...(bot ? [bot.adapter] : [])])];
  const [name, setName] = useState(bot?.name ?? '');
  const [adapter, setAdapter] = useState(bot?.adapter ?? 'http-bot');
  const [pipelineId, setPipelineId] = useState(bot?.pipelineId ?? '');
  const [enabled, setEnabled] = useState(bot?.enabled ?? true);
  const [settings, setSettings] = useState(JSON.stringify(bot?.adapterConfig ?? template('http-bot'), null, 2));
  const save = useAction();
  const remove = useAction();
  const chosenPipeline = pipelineId || pipelines.data?.items[0]?.id || '';

  const submit = (e: FormEvent) => {
    e.preventDefault();
    void save.run(async () => {
      const adapterConfig = parseJsonObject(settings, 'adapter settings');
      if (!chosenPipeline) throw new Error('Choose a pipeline (create one first).');
      if (!bot) {
        const created = await request('POST', '/bots', AdminApi.Bot, { body: { name: name.trim(), adapter, adapterConfig, pipelineId: chosenPipeline, enabled } });
        location.hash = formatRoute({ page: 'bots', id: created.id });
        return;
      }
      await request('PATCH', `/bots/${encodeURIComponent(bot.id)}`, AdminApi.Bot, { body: { name: name.trim(), adapterConfig, pipelineId: chosenPipeline, enabled }, version: bot.version });
      onSaved?.('Saved.');
    });
  };

  return (
    <section>
      <PageHeader title={bot ? `Bot ${bot.name}` : 'New bot'}>
        {bot ? <a href={formatRoute({ page: 'queries', params: { botId: bot.id } })}>Its queries</a> : null}
        <a href={formatRoute({ page: 'bots' })}>All bots</a>
      </PageHeader>
      <form className="form" onSubmit={submit} aria-label="bot">
        {bot ? <p className="meta">Id <span className="mono">{bot.id}</span>; version {bot.version}, managed by {bot.managedBy}, updated {fmtTime(bot.updatedAt)}</p> : null}
        <Field label="Name" htmlFor="bot-name"><input id="bot-name" value={name} onChange={(e) => setName(e.target.value)} required /></Field>
        <Field label="Adapter" htmlFor="bot-adapter">
          <select id="bot-adapter" value={adapter} disabled={Boolean(bot)} onChange={(e) => {
            setAdapter(e.target.value);
            setSettings(JSON.stringify(template(e.target.value), null, 2));
          }}>
            {adapters.map((a) => <option key={a} value={a}>{a}</option>)}
          </select>
        </Field>
        <Field label="Pipeline" htmlFor="bot-pipeline">
          <select id="bot-pipeline" value={chosenPipeline} onChange={(e) => setPipelineId(e.target.value)}>
            {pipelines.data?.items.map((p) => <option key={p.id} value={p.id}>{p.name} ({p.id})</option>)}
          </select>
        </Field>
        <ErrorNote error={pipelines.error} />
        <label className="inline"><input id="bot-enabled" type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} /> Enabled</label>
        <Field label="Adapter settings (JSON)" htmlFor="bot-settings" hint="Masked secrets (••••…) left as they are keep the stored value.">
          <textarea id="bot-settings" className="mono" rows={8} value={settings} onChange={(e) => setSettings(e.target.value)} spellCheck={false} />
        </Field>
        <div className="buttons">
          <button type="submit" disabled={!canWrite || save.busy}>{save.busy ? 'Saving…' : bot ? 'Save' : 'Create bot'}</button>
          {bot && canWrite ? (
            <button type="button" className="danger" disabled={remove.busy} onClick={() => {
              if (!confirm(`Delete bot ${bot.name}?`)) return;
              void remove.run(async () => {
                await request('DELETE', `/bots/${encodeURIComponent(bot.id)}`, null, { version: bot.version });
                location.hash = formatRoute({ page: 'bots' });
              });
            }}>Delete</button>
          ) : null}
        </div>
        <ErrorNote error={save.error ?? remove.error} />
        <DoneNote text={save.done ?? (save.error ? undefined : notice)} />
      </form>
    </section>
  );
}
