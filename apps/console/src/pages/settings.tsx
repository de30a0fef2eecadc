// Instance settings: LangBot's command switch, prefixes and admins, and the ban words. Each value left at
// "default" uses the deployment's own (the orchestrator's environment, the ban-word file).
import { useEffect, useState, type FormEvent } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { request } from '../lib/api.js';
import { Busy, DoneNote, ErrorNote, Field, PageHeader, useAction, useLoad } from '../ui.js';
import { Code, richText, useI18n } from '../i18n/react.js';

type Enable = 'default' | 'on' | 'off';

interface Draft {
  enable: Enable;
  prefix: string;
  admins: string;
  storeBanWords: boolean;
  words: string;
  mask: string;
  maskWord: string;
  showMessageText: boolean;
}

function draftOf(s: AdminApi.InstanceSettings): Draft {
  return {
    enable: s.command.enable === null ? 'default' : s.command.enable ? 'on' : 'off',
    prefix: (s.command.prefix ?? []).join(' '),
    admins: (s.command.admins ?? []).join('\n'),
    storeBanWords: s.banWords !== null,
    words: (s.banWords?.words ?? []).join('\n'),
    mask: s.banWords?.mask ?? '*',
    maskWord: s.banWords?.mask_word ?? '',
    showMessageText: s.monitoring.showMessageText === true,
  };
}

/** The PUT body: every value, null where the form says "default". */
function bodyOf(d: Draft): AdminApi.InstanceSettingsValues {
  const prefix = d.prefix.split(/\s+/).filter(Boolean);
  const words = d.words.split('\n').map((w) => w.trim()).filter(Boolean);
  const admins = d.admins.split('\n').map((a) => a.trim()).filter(Boolean);
  return {
    command: { enable: d.enable === 'default' ? null : d.enable === 'on', prefix: prefix.length ? prefix : null, admins: admins.length ? admins : null },
    banWords: d.storeBanWords ? { words, mask: d.mask, mask_word: d.maskWord } : null,
    monitoring: { showMessageText: d.showMessageText ? true : null },
  };
}

export function Settings({ canWrite }: { canWrite: boolean }) {
  const loaded = useLoad(() => request('GET', '/settings', AdminApi.InstanceSettings), []);
  const [draft, setDraft] = useState<Draft>();
  const action = useAction();
  const i18n = useI18n();
  const { t, dateTime } = i18n;
  useEffect(() => {
    if (loaded.data) setDraft(draftOf(loaded.data));
  }, [loaded.data]);

  const save = (e: FormEvent) => {
    e.preventDefault();
    if (!draft || !loaded.data) return;
    const version = loaded.data.version;
    void action.run(async () => {
      const saved = await request('PUT', '/settings', AdminApi.InstanceSettings, { body: bodyOf(draft), version });
      loaded.reload();
      return t('settings.saved', { version: saved.version });
    });
  };
  const set = (patch: Partial<Draft>) => setDraft((d) => (d ? { ...d, ...patch } : d));

  return (
    <section>
      <PageHeader title={t('settings.title')}>
        <button onClick={loaded.reload} disabled={loaded.loading}>{t('common.reload')}</button>
      </PageHeader>
      <ErrorNote error={loaded.error ?? action.error} />
      <DoneNote text={action.done} />
      <Busy on={loaded.loading} />
      {draft && loaded.data ? (
        <form aria-label={t('settings.form')} onSubmit={save}>
          <fieldset disabled={!canWrite}>
            <legend>{t('settings.commands')}</legend>
            <Field label={t('settings.commands')} htmlFor="settings-command-enable" hint={richText(i18n, 'settings.commandsHint', { key: <Code>command.enable</Code>, env: <Code>COMMAND_ENABLE</Code> })}>
              <select id="settings-command-enable" value={draft.enable} onChange={(e) => set({ enable: e.target.value === 'on' ? 'on' : e.target.value === 'off' ? 'off' : 'default' })}>
                <option value="default">{t('settings.default')}</option>
                <option value="on">{t('settings.on')}</option>
                <option value="off">{t('settings.off')}</option>
              </select>
            </Field>
            <Field label={t('settings.prefixes')} htmlFor="settings-command-prefix" hint={richText(i18n, 'settings.prefixesHint', { key: <Code>command.prefix</Code>, env: <Code>COMMAND_PREFIX</Code> })}>
              <input id="settings-command-prefix" value={draft.prefix} onChange={(e) => set({ prefix: e.target.value })} />
            </Field>
            <Field label={t('settings.admins')} htmlFor="settings-command-admins" hint={richText(i18n, 'settings.adminsHint', { person: <Code>person:12345</Code>, group: <Code>group:67890</Code> })}>
              <textarea id="settings-command-admins" rows={3} value={draft.admins} onChange={(e) => set({ admins: e.target.value })} />
            </Field>
          </fieldset>
          <fieldset disabled={!canWrite}>
            <legend>{t('settings.banWords')}</legend>
            <Field label={t('settings.storeBanWords')} htmlFor="settings-banwords-on" hint={richText(i18n, 'settings.storeBanWordsHint', { env: <Code>CONVEYOR_BAN_WORDS_FILE</Code> })}>
              <input id="settings-banwords-on" type="checkbox" checked={draft.storeBanWords} onChange={(e) => set({ storeBanWords: e.target.checked })} />
            </Field>
            {draft.storeBanWords ? (
              <>
                <Field label={t('settings.words')} htmlFor="settings-banwords-words" hint={t('settings.wordsHint')}>
                  <textarea id="settings-banwords-words" rows={6} value={draft.words} onChange={(e) => set({ words: e.target.value })} />
                </Field>
                <Field label={t('settings.mask')} htmlFor="settings-banwords-mask" hint={t('settings.maskHint')}>
                  <input id="settings-banwords-mask" value={draft.mask} onChange={(e) => set({ mask: e.target.value })} />
                </Field>
                <Field label={t('settings.maskWord')} htmlFor="settings-banwords-mask-word" hint={t('settings.maskWordHint')}>
                  <input id="settings-banwords-mask-word" value={draft.maskWord} onChange={(e) => set({ maskWord: e.target.value })} />
                </Field>
              </>
            ) : null}
          </fieldset>
          <fieldset disabled={!canWrite}>
            <legend>{t('settings.monitoring')}</legend>
            <Field label={t('settings.showMessageText')} htmlFor="settings-show-message-text" hint={t('settings.showMessageTextHint')}>
              <input id="settings-show-message-text" type="checkbox" checked={draft.showMessageText} onChange={(e) => set({ showMessageText: e.target.checked })} />
            </Field>
          </fieldset>
          <p className="hint">{t('settings.version', { version: loaded.data.version, updated: dateTime(loaded.data.updatedAt) })}</p>
          <button type="submit" disabled={!canWrite || action.busy}>{t('common.save')}</button>
        </form>
      ) : null}
    </section>
  );
}
