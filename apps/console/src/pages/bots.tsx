// Bots: which platform adapter, its settings as a form from the platform's own schema (or as JSON;
// secrets come back masked; sent back unchanged, they are kept), the pipeline it routes to, on or off,
// and where the platform reaches it: the webhook URL to paste, or the gateway's hold on its connection.
import { useMemo, useState, type FormEvent } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { listAll, request } from '../lib/api.js';
import { formatRoute, type Route } from '../lib/routes.js';
import { Busy, DoneNote, ErrorNote, Field, PageHeader, parseJsonObject, useAction, useLoad } from '../ui.js';
import { useI18n } from '../i18n/react.js';
import { ConfigForm } from '../pipeline-form.js';
import { buildFields, isRecord, type JsonSchema } from '../lib/schema-form.js';

const NO_ISSUES = new Map<string, string>();

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
  // Keyed: another bot's page starts afresh (no note carried over from the last one).
  if (route.id) return <BotLoader key={route.id} id={route.id} canWrite={canWrite} />;
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
  const [config, setConfig] = useState<unknown>(bot?.adapterConfig ?? template('http-bot'));
  const [handoff, setHandoff] = useState<HandoffDraft>(handoffDraft(bot?.humanHandoff ?? null));
  /** The settings as JSON text while they are edited as JSON, else null (the form). */
  const [rawText, setRawText] = useState<string | null>(null);
  const schema = offered.data?.items.find((p) => p.name === adapter)?.configSchema;
  // The API sends each platform's JSON Schema (z.toJSONSchema of its zod schema): the form's input.
  const fields = useMemo(() => (schema ? buildFields(schema as JsonSchema) : undefined), [schema]);
  const asJson = rawText !== null || (offered.data !== undefined && !fields);
  const save = useAction();
  const remove = useAction();
  const i18n = useI18n();
  const { t } = i18n;
  const chosenPipeline = pipelineId || pipelines.data?.items[0]?.id || '';

  const submit = (e: FormEvent) => {
    e.preventDefault();
    void save.run(async () => {
      const adapterConfig = rawText !== null || !fields ? parseJsonObject(rawText ?? JSON.stringify(config), t('bots.settingsField'), i18n) : isRecord(config) ? config : {};
      if (!chosenPipeline) throw new Error(t('bots.choosePipeline'));
      if (!bot) {
        const created = await request('POST', '/bots', AdminApi.Bot, { body: { name: name.trim(), adapter, adapterConfig, pipelineId: chosenPipeline, enabled, humanHandoff: handoffBody(handoff) } });
        location.hash = formatRoute({ page: 'bots', id: created.id });
        return;
      }
      await request('PATCH', `/bots/${encodeURIComponent(bot.id)}`, AdminApi.Bot, { body: { name: name.trim(), adapterConfig, pipelineId: chosenPipeline, enabled, humanHandoff: handoffBody(handoff) }, version: bot.version });
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
            setConfig(template(e.target.value));
            if (rawText !== null) setRawText(JSON.stringify(template(e.target.value), null, 2));
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
        <fieldset className="bot-settings">
          <legend>{t('bots.settingsForm')}</legend>
          <small className="hint">{t('common.maskedHint')}</small>
          {fields ? (
            <label className="inline"><input id="bot-json" type="checkbox" checked={rawText !== null} onChange={(e) => {
              if (e.target.checked) return setRawText(JSON.stringify(config, null, 2));
              try {
                setConfig(parseJsonObject(rawText ?? '{}', t('bots.settingsField'), i18n));
                setRawText(null);
              } catch (err) {
                save.clear();
                void save.run(() => Promise.reject(err));
              }
            }} /> {t('bots.editJson')}</label>
          ) : null}
          {asJson ? (
            <Field label={t('bots.settings')} htmlFor="bot-settings">
              <textarea id="bot-settings" className="mono" translate="no" rows={8} value={rawText ?? JSON.stringify(config, null, 2)} onChange={(e) => setRawText(e.target.value)} spellCheck={false} />
            </Field>
          ) : fields ? <ConfigForm root={fields} value={config} onChange={setConfig} issues={NO_ISSUES} disabled={!canWrite} /> : <Busy on />}
        </fieldset>
        <HandoffFields draft={handoff} onChange={setHandoff} disabled={!canWrite} />
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
      {bot ? <BotEndpointView id={bot.id} /> : null}
    </section>
  );
}

/** The bot's `humanHandoff` as the form edits it: keywords one per line; off is null. */
interface HandoffDraft {
  on: boolean;
  keywords: string;
  tool: boolean;
  reply: string;
  webhookUrl: string;
}

function handoffDraft(h: AdminApi.BotHumanHandoff | null): HandoffDraft {
  return { on: h !== null, keywords: (h?.keywords ?? []).join('\n'), tool: h?.tool ?? false, reply: h?.reply ?? '', webhookUrl: h?.webhookUrl ?? '' };
}

function handoffBody(d: HandoffDraft): Partial<AdminApi.BotHumanHandoff> | null {
  if (!d.on) return null;
  const keywords = d.keywords.split('\n').map((k) => k.trim()).filter(Boolean);
  // An empty reply takes the server's default.
  return { keywords, tool: d.tool, ...(d.reply.trim() ? { reply: d.reply.trim() } : {}), webhookUrl: d.webhookUrl.trim() || null };
}

/** Whether and how a chat of this bot asks for a person. */
function HandoffFields({ draft, onChange, disabled }: { draft: HandoffDraft; onChange: (d: HandoffDraft) => void; disabled: boolean }) {
  const { t } = useI18n();
  const set = (patch: Partial<HandoffDraft>) => onChange({ ...draft, ...patch });
  return (
    <fieldset className="bot-handoff">
      <legend>{t('bots.handoff')}</legend>
      <label className="inline"><input id="bot-handoff-on" type="checkbox" checked={draft.on} disabled={disabled} onChange={(e) => set({ on: e.target.checked })} /> {t('bots.handoffOn')}</label>
      {draft.on ? (
        <>
          <Field label={t('bots.handoffKeywords')} htmlFor="bot-handoff-keywords" hint={t('bots.handoffKeywordsHint')}>
            <textarea id="bot-handoff-keywords" rows={3} value={draft.keywords} disabled={disabled} onChange={(e) => set({ keywords: e.target.value })} />
          </Field>
          <label className="inline"><input id="bot-handoff-tool" type="checkbox" checked={draft.tool} disabled={disabled} onChange={(e) => set({ tool: e.target.checked })} /> {t('bots.handoffTool')}</label>
          <Field label={t('bots.handoffReply')} htmlFor="bot-handoff-reply" hint={t('bots.handoffReplyHint')}>
            <input id="bot-handoff-reply" value={draft.reply} disabled={disabled} onChange={(e) => set({ reply: e.target.value })} />
          </Field>
          <Field label={t('bots.handoffWebhook')} htmlFor="bot-handoff-webhook" hint={t('bots.handoffWebhookHint')}>
            <input id="bot-handoff-webhook" className="mono" translate="no" value={draft.webhookUrl} disabled={disabled} onChange={(e) => set({ webhookUrl: e.target.value })} />
          </Field>
        </>
      ) : null}
    </fieldset>
  );
}

/** Where the platform reaches the bot: the webhook URL (or path) to paste, and a held connection's lease. */
function BotEndpointView({ id }: { id: string }) {
  const endpoint = useLoad((signal) => request('GET', `/bots/${encodeURIComponent(id)}/endpoint`, AdminApi.BotEndpoint, { signal }), [id]);
  const copy = useAction();
  const { t, duration } = useI18n();
  const e = endpoint.data;
  return (
    <section className="bot-endpoint" aria-label={t('bots.endpoint')}>
      <h3>{t('bots.endpoint')}</h3>
      <ErrorNote error={endpoint.error} />
      {e ? (
        <>
          {e.webhookUrl ? (
            <Field label={t('bots.webhookUrl')} htmlFor="bot-webhook-url">
              <input id="bot-webhook-url" className="mono" translate="no" readOnly value={e.webhookUrl} onFocus={(ev) => ev.target.select()} />
              <button type="button" onClick={() => void copy.run(async () => { await navigator.clipboard.writeText(e.webhookUrl ?? ''); return t('bots.copied'); })}>{t('bots.copy')}</button>
            </Field>
          ) : e.webhookPath ? (
            <Field label={t('bots.webhookPath')} htmlFor="bot-webhook-path" hint={t('bots.webhookUnset')}>
              <input id="bot-webhook-path" className="mono" translate="no" readOnly value={e.webhookPath} />
            </Field>
          ) : <p className="hint">{t('bots.noWebhook')}</p>}
          <DoneNote text={copy.done} />
          <ErrorNote error={copy.error} />
          {e.connection ? (
            <div className="connection" data-state={e.connection.state}>
              <h4>{t('bots.connection')}</h4>
              {e.connection.holder ? (
                <>
                  <p>{t('bots.connectionHolder')} <span className="mono holder" translate="no">{e.connection.holder}</span></p>
                  <p>{t('bots.connectionHeld', { duration: duration(e.connection.leaseExpiresInMs) })}</p>
                </>
              ) : <p>{t('bots.connectionNotHeld')}</p>}
              {e.connection.resumable ? <p className="hint">{t('bots.connectionResumable')}</p> : null}
              <button type="button" onClick={endpoint.reload} disabled={endpoint.loading}>{t('common.refresh')}</button>
            </div>
          ) : null}
        </>
      ) : <Busy on={endpoint.loading} />}
    </section>
  );
}
