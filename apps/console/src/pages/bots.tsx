// Bots: which platform adapter, its settings (secrets come back masked; sent back unchanged, they are
// kept), the pipeline it routes to, on or off.
import { useState, type FormEvent } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { listAll, request } from '../lib/api.js';
import { formatRoute, type Route } from '../lib/routes.js';
import { Busy, DoneNote, ErrorNote, Field, PageHeader, parseJsonObject, useAction, useLoad } from '../ui.js';
import { useI18n } from '../i18n/react.js';

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
  const { t, dateTime } = useI18n();
  return (
    <section>
      <PageHeader title={t('bots.title')}>{canWrite ? <a className="button" href={formatRoute({ page: 'bots', id: 'new' })}>{t('bots.new')}</a> : null}</PageHeader>
      <ErrorNote error={list.error} />
      <Busy on={list.loading} />
      {list.data ? (
        <table>
          <thead><tr><th>{t('common.name')}</th><th>{t('bots.adapter')}</th><th>{t('bots.pipeline')}</th><th>{t('bots.enabled')}</th><th>{t('common.id')}</th><th>{t('common.updated')}</th></tr></thead>
          <tbody>
            {list.data.items.map((b) => (
              <tr key={b.id} data-id={b.id}>
                <td translate="no"><a href={formatRoute({ page: 'bots', id: b.id })}>{b.name}</a></td>
                <td translate="no">{b.adapter}</td>
                <td translate="no"><a href={formatRoute({ page: 'pipelines', id: b.pipelineId })}>{b.pipelineId}</a></td>
                <td>{b.enabled ? t('common.yes') : t('common.no')}</td>
                <td className="mono" translate="no">{b.id}</td>
                <td>{dateTime(b.updatedAt)}</td>
              </tr>
            ))}
            {list.data.items.length === 0 ? <tr><td colSpan={6} className="empty">{t('bots.empty')}</td></tr> : null}
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
  const i18n = useI18n();
  const { t } = i18n;
  const chosenPipeline = pipelineId || pipelines.data?.items[0]?.id || '';

  const submit = (e: FormEvent) => {
    e.preventDefault();
    void save.run(async () => {
      const adapterConfig = parseJsonObject(settings, t('bots.settingsField'), i18n);
      if (!chosenPipeline) throw new Error(t('bots.choosePipeline'));
      if (!bot) {
        const created = await request('POST', '/bots', AdminApi.Bot, { body: { name: name.trim(), adapter, adapterConfig, pipelineId: chosenPipeline, enabled } });
        location.hash = formatRoute({ page: 'bots', id: created.id });
        return;
      }
      await request('PATCH', `/bots/${encodeURIComponent(bot.id)}`, AdminApi.Bot, { body: { name: name.trim(), adapterConfig, pipelineId: chosenPipeline, enabled }, version: bot.version });
      onSaved?.(t('common.saved'));
    });
  };

  return (
    <section>
      <PageHeader title={bot ? t('bots.editTitle', { name: bot.name }) : t('bots.new')}>
        {bot ? <a href={formatRoute({ page: 'queries', params: { botId: bot.id } })}>{t('bots.itsQueries')}</a> : null}
        <a href={formatRoute({ page: 'bots' })}>{t('bots.all')}</a>
      </PageHeader>
      <form className="form" onSubmit={submit} aria-label={t('bots.form')}>
        {bot ? <p className="meta">{t('bots.meta', { id: bot.id, version: bot.version, managedBy: i18n.lookup(`managedBy.${bot.managedBy}`) ?? bot.managedBy, updated: i18n.dateTime(bot.updatedAt) })}</p> : null}
        <Field label={t('common.name')} htmlFor="bot-name"><input id="bot-name" value={name} onChange={(e) => setName(e.target.value)} required /></Field>
        <Field label={t('bots.adapter')} htmlFor="bot-adapter">
          <select id="bot-adapter" value={adapter} disabled={Boolean(bot)} onChange={(e) => {
            setAdapter(e.target.value);
            setSettings(JSON.stringify(template(e.target.value), null, 2));
          }}>
            {adapters.map((a) => <option key={a} value={a} translate="no">{a}</option>)}
          </select>
        </Field>
        <Field label={t('bots.pipeline')} htmlFor="bot-pipeline">
          <select id="bot-pipeline" value={chosenPipeline} onChange={(e) => setPipelineId(e.target.value)}>
            {pipelines.data?.items.map((p) => <option key={p.id} value={p.id} translate="no">{p.name} ({p.id})</option>)}
          </select>
        </Field>
        <ErrorNote error={pipelines.error} />
        <label className="inline"><input id="bot-enabled" type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} /> {t('bots.enabled')}</label>
        <Field label={t('bots.settings')} htmlFor="bot-settings" hint={t('common.maskedHint')}>
          <textarea id="bot-settings" className="mono" translate="no" rows={8} value={settings} onChange={(e) => setSettings(e.target.value)} spellCheck={false} />
        </Field>
        <div className="buttons">
          <button type="submit" disabled={!canWrite || save.busy}>{save.busy ? t('common.saving') : bot ? t('common.save') : t('bots.create')}</button>
          {bot && canWrite ? (
            <button type="button" className="danger" disabled={remove.busy} onClick={() => {
              if (!confirm(t('bots.deleteConfirm', { name: bot.name }))) return;
              void remove.run(async () => {
                await request('DELETE', `/bots/${encodeURIComponent(bot.id)}`, null, { version: bot.version });
                location.hash = formatRoute({ page: 'bots' });
              });
            }}>{t('common.delete')}</button>
          ) : null}
        </div>
        <ErrorNote error={save.error ?? remove.error} />
        <DoneNote text={save.done ?? (save.error ? undefined : notice)} />
      </form>
    </section>
  );
}
