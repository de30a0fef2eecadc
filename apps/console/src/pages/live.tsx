// Live conversations: the chats with recent traffic and one chat's transcript as it happens, both
// server-sent events from the admin replica (which hears the bus), so nothing here polls.
import { useEffect, useState, type FormEvent } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { request } from '../lib/api.js';
import { formatRoute, type Route } from '../lib/routes.js';
import { Busy, DoneNote, ErrorNote, Field, PageHeader, useAction, useLoad } from '../ui.js';
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

/** How often the navigation asks how many chats wait for a person. */
const WAITING_POLL_MS = 15_000;

/** The chats waiting for a person, read again every WAITING_POLL_MS (and when `key` changes). */
function useWaiting(key: unknown): ReturnType<typeof useLoad<AdminApi.HumanRequestList>> {
  const waiting = useLoad((signal) => request('GET', '/human-requests', AdminApi.HumanRequestList, { signal }), [key]);
  useEffect(() => {
    const timer = setInterval(waiting.reload, WAITING_POLL_MS);
    return () => clearInterval(timer);
  }, [waiting.reload]);
  return waiting;
}

/** The navigation's count of chats waiting for a person (nothing when none do). */
export function WaitingBadge() {
  const waiting = useWaiting(location.hash);
  const { t } = useI18n();
  const n = waiting.data?.items.length ?? 0;
  return n > 0 ? <span className="badge waiting" id="nav-waiting" title={t('live.waitingCount', { n })} aria-label={t('live.waitingCount', { n })}>{n}</span> : null;
}

export function Live({ route, canWrite }: { route: Route; canWrite: boolean }) {
  const { botId, launcherType, launcherId } = route.params;
  return botId && launcherType && launcherId ? <Transcript chat={{ botId, launcherType, launcherId }} canWrite={canWrite} /> : <LiveList />;
}

function LiveList() {
  const [sessions, setSessions] = useState<AdminApi.LiveSession[]>();
  const [textShown, setTextShown] = useState(false);
  const { t, dateTime } = useI18n();
  const waiting = useWaiting(sessions?.filter((s) => s.waitingSince !== null).length);
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
      {waiting.data?.items.length ? (
        <>
          <h3>{t('live.waitingTitle')}</h3>
          <table id="human-requests">
            <thead><tr><th>{t('sessions.bot')}</th><th>{t('sessions.chat')}</th><th>{t('live.via')}</th><th>{t('live.reason')}</th><th>{t('live.requestedAt')}</th></tr></thead>
            <tbody>
              {waiting.data.items.map((w) => (
                <tr key={`${w.botId}/${chatOf(w)}`} data-chat={chatOf(w)}>
                  <td translate="no">{w.botId}</td>
                  <td translate="no"><a href={formatRoute({ page: 'live', params: { botId: w.botId, launcherType: w.launcherType, launcherId: w.launcherId } })}>{chatOf(w)}</a></td>
                  <td>{t(`live.via.${w.via}`)}</td>
                  <td translate={w.reason === null ? undefined : 'no'}>{w.reason ?? '—'}</td>
                  <td>{dateTime(w.requestedAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : null}
      <Busy on={!sessions} />
      {sessions ? (
        <table id="live-sessions">
          <thead><tr><th>{t('sessions.bot')}</th><th>{t('live.platform')}</th><th>{t('sessions.chat')}</th><th>{t('live.sender')}</th><th>{t('live.lastMessage')}</th><th>{t('live.state')}</th><th>{t('sessions.last')}</th></tr></thead>
          <tbody>
            {sessions.map((s) => (
              <tr key={`${s.botId}/${chatOf(s)}`} data-chat={chatOf(s)} data-replying={String(s.replying)} data-waiting={String(s.waitingSince !== null)}>
                <td translate="no">{s.botId}</td>
                <td translate="no">{s.adapter}</td>
                <td translate="no"><a href={formatRoute({ page: 'live', params: { botId: s.botId, launcherType: s.launcherType, launcherId: s.launcherId } })}>{chatOf(s)}</a></td>
                <td translate="no">{s.senderName}</td>
                <td translate={s.lastMessage === null ? undefined : 'no'}>{s.lastMessage ?? t('live.chars', { n: s.lastMessageChars })}</td>
                <td>
                  {s.replying ? <span className="badge replying">{t('live.replying')}</span> : t('live.idle')}
                  {s.takenOverBy ? <span className="badge taken">{t('live.takenBadge')}</span> : null}
                  {s.waitingSince ? <span className="badge waiting">{t('live.waitingBadge')}</span> : null}
                </td>
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

function Transcript({ chat, canWrite }: { chat: { botId: string; launcherType: string; launcherId: string }; canWrite: boolean }) {
  const [entries, setEntries] = useState<AdminApi.LiveEntry[]>();
  const [replying, setReplying] = useState(false);
  const [takenBy, setTakenBy] = useState<string | null>(null);
  const [waitingSince, setWaitingSince] = useState<string | null>(null);
  const { t, dateTime } = useI18n();
  // A request made while no one watched is known from the list only; one made since, from the stream too.
  const waiting = useWaiting(waitingSince);
  const listed = waiting.data?.items.find((w) => w.botId === chat.botId && chatOf(w) === chatOf(chat));
  const asked = waitingSince ?? listed?.requestedAt ?? null;
  // Here, not in the note: its success stays shown after the note goes.
  const dismiss = useAction();
  const query = new URLSearchParams(chat).toString();
  const stream = useEvents(`/live/transcript?${query}`, (type, data) => {
    if (type === 'snapshot') {
      const snapshot = AdminApi.LiveTranscriptSnapshot.parse(data);
      setEntries(snapshot.entries);
      setReplying(snapshot.session?.replying ?? false);
      setTakenBy(snapshot.session?.takenOverBy ?? null);
      setWaitingSince(snapshot.session?.waitingSince ?? null);
    } else if (type === 'entry') {
      const entry = AdminApi.LiveEntry.parse(data);
      setEntries((all) => {
        const list = all ?? [];
        const at = list.findIndex((e) => e.id === entry.id);
        return at < 0 ? [...list, entry] : list.map((e, i) => (i === at ? entry : e));
      });
    } else if (type === 'session') {
      const session = AdminApi.LiveSession.parse(data);
      setReplying(session.replying);
      setTakenBy(session.takenOverBy);
      setWaitingSince(session.waitingSince);
    }
  });
  return (
    <section>
      <PageHeader title={t('live.transcriptTitle')}>
        <span className={`live-state ${stream.connected ? 'on' : 'off'}`}>{stream.connected ? t('live.connected') : t('live.connecting')}</span>
        <a href={formatRoute({ page: 'live' })}>{t('live.all')}</a>
      </PageHeader>
      <p className="meta" translate="no">{chat.botId} · {chatOf(chat)}</p>
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
      {asked && !takenBy ? <WaitingNote chat={chat} since={asked} canWrite={canWrite} act={dismiss} onDismissed={() => { setWaitingSince(null); waiting.reload(); }} /> : null}
      <DoneNote text={dismiss.done} />
      {canWrite ? <TakeoverControls chat={chat} takenBy={takenBy} /> : takenBy ? <p className="hint">{t('live.takenBy', { operator: takenBy })}</p> : null}
    </section>
  );
}

/** The chat asked for a person: since when, and (admins) a way to clear the request without taking the chat. */
function WaitingNote({ chat, since, canWrite, act, onDismissed }: { chat: { botId: string; launcherType: string; launcherId: string }; since: string; canWrite: boolean; act: ReturnType<typeof useAction>; onDismissed: () => void }) {
  const { t, dateTime } = useI18n();
  const dismiss = () => void act.run(async () => {
    await request('DELETE', `/human-requests?${new URLSearchParams(chat).toString()}`, null);
    onDismissed();
    return t('live.dismissed');
  });
  return (
    <div className="waiting-note" id="human-request-note">
      <p><span className="badge waiting">{t('live.waitingBadge')}</span> {t('live.waitingHint', { at: dateTime(since) })}</p>
      {canWrite ? <button type="button" id="human-request-dismiss" disabled={act.busy} onClick={dismiss}>{t('live.dismiss')}</button> : null}
      <ErrorNote error={act.error} />
    </div>
  );
}

/** Take the chat over, answer it as the bot, hand it back (admins). */
function TakeoverControls({ chat, takenBy }: { chat: { botId: string; launcherType: string; launcherId: string }; takenBy: string | null }) {
  const [idleMinutes, setIdleMinutes] = useState('30');
  const [text, setText] = useState('');
  const act = useAction();
  const { t } = useI18n();
  const target = { botId: chat.botId, launcherType: chat.launcherType === 'group' ? 'group' : 'person', launcherId: chat.launcherId };
  const take = () => void act.run(async () => {
    await request('POST', '/takeovers', AdminApi.Takeover, { body: { ...target, idleMinutes: idleMinutes.trim() === '' ? null : Number(idleMinutes) } });
    return t('live.taken');
  });
  const handBack = () => void act.run(async () => {
    await request('DELETE', `/takeovers?${new URLSearchParams(target).toString()}`, null);
    return t('live.handedBack');
  });
  const send = (e: FormEvent) => {
    e.preventDefault();
    void act.run(async () => {
      await request('POST', '/takeovers/reply', AdminApi.Takeover, { body: { ...target, text } });
      setText('');
      return t('live.sent');
    });
  };
  if (!takenBy) {
    return (
      <div className="form takeover" aria-label={t('live.takeoverForm')}>
        <p className="hint">{t('live.takeoverHint')}</p>
        <Field label={t('live.idleMinutes')} htmlFor="takeover-idle"><input id="takeover-idle" inputMode="numeric" value={idleMinutes} onChange={(e) => setIdleMinutes(e.target.value)} /></Field>
        <div className="buttons"><button type="button" id="takeover-take" disabled={act.busy} onClick={take}>{t('live.takeOver')}</button></div>
        <ErrorNote error={act.error} />
        <DoneNote text={act.done} />
      </div>
    );
  }
  return (
    <form className="form takeover" onSubmit={send} aria-label={t('live.takeoverForm')}>
      <p className="hint">{t('live.takenBy', { operator: takenBy })}</p>
      <Field label={t('live.reply')} htmlFor="takeover-text"><textarea id="takeover-text" rows={3} value={text} onChange={(e) => setText(e.target.value)} /></Field>
      <div className="buttons">
        <button type="submit" id="takeover-send" disabled={act.busy || text.trim() === ''}>{t('live.send')}</button>
        <button type="button" id="takeover-hand-back" disabled={act.busy} onClick={handBack}>{t('live.handBack')}</button>
      </div>
      <ErrorNote error={act.error} />
      <DoneNote text={act.done} />
    </form>
  );
}
