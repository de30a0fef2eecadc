// Live conversations: the chats with recent traffic and one chat's transcript as it happens, both
// server-sent events from the admin replica (which hears the bus), so nothing here polls.
import { useEffect, useState } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { formatRoute, type Route } from '../lib/routes.js';
import { Busy, ErrorNote, PageHeader } from '../ui.js';
import { useI18n } from '../i18n/react.js';

/** Follows a server-sent events stream: the snapshot, then each change, until the page leaves. */
function useEvents(path: string, on: (type: string, data: unknown) => void): { connected: boolean; error: string | undefined } {
  const [connected, setConnected] = useState(false);
  const [error, setError] = useState<string>();
  useEffect(() => {
    const source = new EventSource(`/api/v1${path}`, { withCredentials: true });
    const handle = (type: string) => (e: MessageEvent<string>) => on(type, JSON.parse(e.data));
    for (const type of ['snapshot', 'session', 'entry']) source.addEventListener(type, handle(type) as EventListener);
    source.onopen = () => {
      setConnected(true);
      setError(undefined);
    };
    // EventSource reconnects by itself; the note says the view is not live meanwhile.
    source.onerror = () => {
      setConnected(false);
      setError('disconnected');
    };
    return () => source.close();
  }, [path]);
  return { connected, error };
}

const chatOf = (s: { launcherType: string; launcherId: string }) => `${s.launcherType}:${s.launcherId}`;

export function Live({ route }: { route: Route }) {
  const { botId, launcherType, launcherId } = route.params;
  return botId && launcherType && launcherId ? <Transcript chat={{ botId, launcherType, launcherId }} /> : <LiveList />;
}

function LiveList() {
  const [sessions, setSessions] = useState<AdminApi.LiveSession[]>();
  const [textShown, setTextShown] = useState(false);
  const { t, dateTime } = useI18n();
  const stream = useEvents('/live/sessions', (type, data) => {
    if (type === 'snapshot') {
      const snapshot = AdminApi.LiveSessionsSnapshot.parse(data);
      setTextShown(snapshot.textShown);
      setSessions(snapshot.sessions);
    } else if (type === 'session') {
      const session = AdminApi.LiveSession.parse(data);
      setSessions((all) => [session, ...(all ?? []).filter((s) => !(s.botId === session.botId && chatOf(s) === chatOf(session)))]);
    }
  });
  return (
    <section>
      <PageHeader title={t('live.title')}><span className={`live-state ${stream.connected ? 'on' : 'off'}`}>{stream.connected ? t('live.connected') : t('live.connecting')}</span></PageHeader>
      <p className="hint">{t('live.hint')}</p>
      {textShown ? null : <p className="hint">{t('sessions.textHidden')}</p>}
      {stream.error ? <ErrorNote error={new Error(t('live.disconnected'))} /> : null}
      <Busy on={!sessions} />
      {sessions ? (
        <table id="live-sessions">
          <thead><tr><th>{t('sessions.bot')}</th><th>{t('live.platform')}</th><th>{t('sessions.chat')}</th><th>{t('live.sender')}</th><th>{t('live.lastMessage')}</th><th>{t('live.state')}</th><th>{t('sessions.last')}</th></tr></thead>
          <tbody>
            {sessions.map((s) => (
              <tr key={`${s.botId}/${chatOf(s)}`} data-chat={chatOf(s)} data-replying={String(s.replying)}>
                <td translate="no">{s.botId}</td>
                <td translate="no">{s.adapter}</td>
                <td translate="no"><a href={formatRoute({ page: 'live', params: { botId: s.botId, launcherType: s.launcherType, launcherId: s.launcherId } })}>{chatOf(s)}</a></td>
                <td translate="no">{s.senderName}</td>
                <td translate={s.lastMessage === null ? undefined : 'no'}>{s.lastMessage ?? t('live.chars', { n: s.lastMessageChars })}</td>
                <td>{s.replying ? <span className="badge replying">{t('live.replying')}</span> : t('live.idle')}</td>
                <td>{dateTime(s.lastActivityAt)}</td>
              </tr>
            ))}
            {sessions.length === 0 ? <tr><td colSpan={7} className="empty">{t('live.empty')}</td></tr> : null}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}

function Transcript({ chat }: { chat: { botId: string; launcherType: string; launcherId: string } }) {
  const [entries, setEntries] = useState<AdminApi.LiveEntry[]>();
  const [replying, setReplying] = useState(false);
  const { t, dateTime } = useI18n();
  const query = new URLSearchParams(chat).toString();
  const stream = useEvents(`/live/transcript?${query}`, (type, data) => {
    if (type === 'snapshot') setEntries(AdminApi.LiveTranscriptSnapshot.parse(data).entries);
    else if (type === 'entry') {
      const entry = AdminApi.LiveEntry.parse(data);
      setEntries((all) => {
        const list = all ?? [];
        const at = list.findIndex((e) => e.id === entry.id);
        return at < 0 ? [...list, entry] : list.map((e, i) => (i === at ? entry : e));
      });
    } else if (type === 'session') setReplying(AdminApi.LiveSession.parse(data).replying);
  });
  return (
    <section>
      <PageHeader title={t('live.transcriptTitle', { chat: chatOf(chat) })}>
        <span className={`live-state ${stream.connected ? 'on' : 'off'}`}>{stream.connected ? t('live.connected') : t('live.connecting')}</span>
        <a href={formatRoute({ page: 'live' })}>{t('live.all')}</a>
      </PageHeader>
      <p className="meta" translate="no">{chat.botId}</p>
      {stream.error ? <ErrorNote error={new Error(t('live.disconnected'))} /> : null}
      <Busy on={!entries} />
      <ol id="live-transcript" className="transcript">
        {(entries ?? []).map((e) => (
          <li key={e.id} data-role={e.role} data-final={String(e.final)}>
            <span className="who">{t(`live.role.${e.role}`)}</span>{' '}
            <span className="when">{dateTime(e.at)}</span>{' '}
            <span className="text" translate={e.text === null ? undefined : 'no'}>{e.text ?? t('live.chars', { n: e.chars })}</span>
            {e.final ? null : <span className="badge replying">{t('live.streaming')}</span>}
          </li>
        ))}
        {entries && entries.length === 0 ? <li className="empty">{t('live.noLines')}</li> : null}
      </ol>
      {replying ? <p className="hint">{t('live.replying')}</p> : null}
    </section>
  );
}
