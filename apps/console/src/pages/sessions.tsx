// Sessions (chats) active in a range and, for one chat, its conversations with their messages. The
// text of the messages shows only when the operator turned on the instance setting
// `monitoring.showMessageText`; otherwise each message keeps its role, time and size.
import { useState } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { request } from '../lib/api.js';
import { formatRoute, type Route } from '../lib/routes.js';
import { Busy, ErrorNote, PageHeader, useLoad } from '../ui.js';
import { useI18n } from '../i18n/react.js';
import { RangePicker, type RangeQuery } from './dashboard.js';

export function Sessions({ route }: { route: Route }) {
  const { botId, launcherType, launcherId } = route.params;
  if (botId && launcherType && launcherId) return <Conversations chat={{ botId, launcherType, launcherId }} />;
  return <SessionList />;
}

interface SessionRow {
  botId: string;
  launcherType: string;
  launcherId: string;
  conversations: number;
  messages: number;
  lastActivityAt: string;
}

function SessionList() {
  const { t, dateTime, number } = useI18n();
  const [query, setQuery] = useState<RangeQuery>({ range: '7d' });
  const [extra, setExtra] = useState<SessionRow[]>([]);
  const load = useLoad(async (signal) => {
    setExtra([]);
    return request('GET', '/monitoring/sessions', AdminApi.MonitoringSessionPage, { query: { range: query.range, from: query.from, to: query.to }, signal });
  }, [query.range, query.from, query.to]);
  const [next, setNext] = useState<string | null | undefined>();
  const cursor = next === undefined ? load.data?.nextCursor ?? null : next;
  const more = async () => {
    if (!cursor) return;
    const page = await request('GET', '/monitoring/sessions', AdminApi.MonitoringSessionPage, { query: { range: query.range, from: query.from, to: query.to, cursor } });
    setExtra((old) => [...old, ...page.items]);
    setNext(page.nextCursor);
  };
  const items = [...(load.data?.items ?? []), ...extra];
  return (
    <section>
      <PageHeader title={t('sessions.title')}>
        <button onClick={load.reload} disabled={load.loading}>{t('common.refresh')}</button>
      </PageHeader>
      <RangePicker value={query} onChange={(q) => { setNext(undefined); setQuery(q); }} idPrefix="sessions" />
      <ErrorNote error={load.error} />
      <table id="session-list">
        <thead><tr><th>{t('sessions.bot')}</th><th>{t('sessions.chat')}</th><th>{t('sessions.conversations')}</th><th>{t('sessions.messages')}</th><th>{t('sessions.last')}</th></tr></thead>
        <tbody>
          {items.map((s) => (
            <tr key={`${s.botId}/${s.launcherType}/${s.launcherId}`} data-chat={`${s.launcherType}:${s.launcherId}`}>
              <td translate="no">{s.botId}</td>
              <td className="mono" translate="no"><a href={formatRoute({ page: 'sessions', params: { botId: s.botId, launcherType: s.launcherType, launcherId: s.launcherId } })}>{s.launcherType}:{s.launcherId}</a></td>
              <td className="num">{number(s.conversations)}</td>
              <td className="num">{number(s.messages)}</td>
              <td>{dateTime(s.lastActivityAt)}</td>
            </tr>
          ))}
          {!load.loading && items.length === 0 ? <tr><td colSpan={5} className="empty">{t('sessions.empty')}</td></tr> : null}
        </tbody>
      </table>
      <Busy on={load.loading} />
      {cursor && !load.loading ? <button onClick={() => void more()}>{t('sessions.loadMore')}</button> : null}
    </section>
  );
}

function Conversations({ chat }: { chat: { botId: string; launcherType: string; launcherId: string } }) {
  const { t, dateTime } = useI18n();
  const load = useLoad((signal) => request('GET', '/monitoring/sessions/conversations', AdminApi.SessionConversations, { query: chat, signal }), [chat.botId, chat.launcherType, chat.launcherId]);
  const d = load.data;
  return (
    <section>
      <PageHeader title={t('sessions.chatTitle')}>
        <button onClick={load.reload} disabled={load.loading}>{t('common.refresh')}</button>
        <a href={formatRoute({ page: 'sessions' })}>{t('sessions.all')}</a>
      </PageHeader>
      <p className="mono" translate="no">{chat.botId} · {chat.launcherType}:{chat.launcherId}</p>
      <ErrorNote error={load.error} />
      <Busy on={load.loading && !d} />
      {d && !d.textShown ? <p className="hint" id="text-hidden">{t('sessions.textHidden')}</p> : null}
      {d?.conversations.map((c) => (
        <article key={c.id} className="conversation" data-id={c.id}>
          <h2>{c.archivedAt ? t('sessions.archived', { at: dateTime(c.archivedAt) }) : t('sessions.active')} <small className="muted">{t('sessions.started', { at: dateTime(c.createdAt) })}</small></h2>
          <ol className="conv-messages">
            {c.messages.map((m) => (
              <li key={m.seq} className={`conv-msg ${m.role}`} data-role={m.role}>
                <span className="conv-role">{t(`sessions.role.${m.role === 'user' || m.role === 'assistant' || m.role === 'tool' || m.role === 'system' ? m.role : 'other'}`)}</span>{' '}
                <small className="muted">{dateTime(m.at)}</small>{' '}
                {m.text !== null ? <span className="conv-text" translate="no">{m.text}</span> : <span className="muted">{t('sessions.chars', { count: m.chars })}</span>}
                {m.toolCalls.length ? <> <span className="muted">{t('sessions.tools')}</span> <span translate="no">{m.toolCalls.join(', ')}</span></> : null}
              </li>
            ))}
          </ol>
        </article>
      ))}
      {d && d.conversations.length === 0 ? <p className="empty">{t('sessions.noConversations')}</p> : null}
    </section>
  );
}
