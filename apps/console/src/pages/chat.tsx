// The debug chat: talk to a pipeline through one of its bots, over the ingress web chat that the
// admin service relays behind the console's sign-in. Answers stream in; each links to its query.
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { AdminApi, DebugChat as Contract } from '@conveyor/contracts';
import { apiUrl, describeError, listAll, request } from '../lib/api.js';
import { formatRoute, type Route } from '../lib/routes.js';
import { SseParser } from '../lib/sse.js';
import { Busy, ErrorNote, Field, PageHeader, useLoad } from '../ui.js';
import { Code, richText, useI18n } from '../i18n/react.js';

/** How long a sent message may wait for its first part before the chat says so. */
const REPLY_TIMEOUT_MS = 120_000;
/** Messages kept on screen; older ones scroll away for good. */
const MAX_MESSAGES = 200;

interface Line {
  key: string;
  kind: 'user' | 'bot' | 'system' | 'error';
  text: string;
  queryId?: string;
  streaming?: boolean;
}

/** A chat's session key: 256 random bits, base64url. The server names the session by a hash of it. */
function newSessionKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes)).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}

const sessionKeyItem = (botId: string) => `conveyor-console-chat-key-${botId}`;

/** This tab's session key for the bot; a new chat when it has none. */
function sessionKeyFor(botId: string): string {
  const existing = sessionStorage.getItem(sessionKeyItem(botId));
  if (existing && Contract.CHAT_SESSION_KEY_RE.test(existing)) return existing;
  const key = newSessionKey();
  sessionStorage.setItem(sessionKeyItem(botId), key);
  return key;
}

export function DebugChat({ route }: { route: Route }) {
  const pipelines = useLoad((signal) => listAll('/pipelines', AdminApi.Pipeline, { signal }), []);
  const bots = useLoad((signal) => listAll('/bots', AdminApi.Bot, { signal }), []);
  const pipelineId = route.params.pipeline ?? pipelines.data?.items[0]?.id ?? '';
  const candidates = (bots.data?.items ?? []).filter((b) => b.pipelineId === pipelineId);
  const botId = candidates.find((b) => b.id === route.params.bot)?.id ?? candidates.find((b) => b.enabled)?.id ?? '';
  const go = (params: Record<string, string | undefined>) => { location.hash = formatRoute({ page: 'chat', params }); };
  const i18n = useI18n();
  const { t } = i18n;

  return (
    <section className="chat-page">
      <PageHeader title={t('chat.title')} />
      <ErrorNote error={pipelines.error ?? bots.error} />
      <Busy on={pipelines.loading || bots.loading} />
      <div className="chat-pick">
        <Field label={t('chat.pipeline')} htmlFor="chat-pipeline">
          <select id="chat-pipeline" value={pipelineId} onChange={(e) => go({ pipeline: e.target.value })}>
            {pipelines.data?.items.map((p) => <option key={p.id} value={p.id} translate="no">{p.name} ({p.id})</option>)}
          </select>
        </Field>
        <Field label={t('chat.throughBot')} htmlFor="chat-bot">
          <select id="chat-bot" value={botId} onChange={(e) => go({ pipeline: pipelineId, bot: e.target.value })}>
            {candidates.map((b) => <option key={b.id} value={b.id} disabled={!b.enabled}>{b.name}{b.enabled ? '' : t('chat.disabled')}</option>)}
          </select>
        </Field>
      </div>
      {bots.data && pipelineId && !botId ? (
        <p className="note error">{richText(i18n, 'chat.noBot', { id: <Code>{pipelineId}</Code> })} <a href={formatRoute({ page: 'bots', id: 'new' })}>{t('chat.createOne')}</a> {t('chat.noBotAfter')}</p>
      ) : null}
      {botId ? <ChatWindow key={botId} botId={botId} /> : null}
    </section>
  );
}

function ChatWindow({ botId }: { botId: string }) {
  const [sessionKey, setSessionKey] = useState(() => sessionKeyFor(botId));
  /** The session's id as the query log shows it, known once the server accepted a message. */
  const [sessionId, setSessionId] = useState<string>();
  const [lines, setLines] = useState<Line[]>([]);
  const [text, setText] = useState('');
  const [sending, setSending] = useState(false);
  const [connected, setConnected] = useState(false);
  const timers = useRef(new Map<string, ReturnType<typeof setTimeout>>());
  const log = useRef<HTMLDivElement>(null);
  const path = `${Contract.DEBUG_CHAT_PATH}/bots/${encodeURIComponent(botId)}/session`;
  const sessionHeaders = { [Contract.CHAT_SESSION_KEY_HEADER]: sessionKey };
  const i18n = useI18n();
  const { t } = i18n;

  const add = (line: Omit<Line, 'key'>) => setLines((ls) => [...ls, { ...line, key: crypto.randomUUID() }].slice(-MAX_MESSAGES));

  const onPart = (part: Contract.WebChatPart) => {
    const t = timers.current.get(part.queryId);
    if (t && part.isFinal) { clearTimeout(t); timers.current.delete(part.queryId); }
    setLines((ls) => {
      // Streamed parts carry the whole text so far: the query's open bubble is replaced, never appended to.
      const i = ls.findLastIndex((l) => l.kind === 'bot' && l.queryId === part.queryId && l.streaming);
      const line: Line = { key: i >= 0 ? ls[i].key : crypto.randomUUID(), kind: 'bot', text: part.text, queryId: part.queryId, streaming: part.stream && !part.isFinal };
      if (i >= 0) return ls.map((l, j) => (j === i ? line : l));
      return [...ls, line].slice(-MAX_MESSAGES);
    });
  };

  useEffect(() => {
    const abort = new AbortController();
    void (async () => {
      let failures = 0;
      while (!abort.signal.aborted) {
        try {
          const res = await fetch(apiUrl(`${path}/events`), { credentials: 'same-origin', headers: { [Contract.CHAT_SESSION_KEY_HEADER]: sessionKey, accept: 'text/event-stream' }, signal: abort.signal });
          if (!res.ok || !res.body) throw new Error(t('chat.streamHttp', { status: res.status }));
          failures = 0;
          setConnected(true);
          const parser = new SseParser();
          const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            for (const ev of parser.push(value)) {
              if (ev.event !== 'part') continue;
              const part = Contract.WebChatPart.safeParse(JSON.parse(ev.data));
              if (part.success) onPart(part.data);
            }
          }
        } catch (err) {
          if (abort.signal.aborted) return;
          if (++failures === 3) add({ kind: 'error', text: t('chat.streamLost', { detail: describeError(err, i18n) }) });
        }
        setConnected(false);
        if (!abort.signal.aborted) await new Promise((r) => setTimeout(r, Math.min(10_000, 500 * 2 ** Math.min(failures, 5))));
      }
    })();
    const pending = timers.current;
    return () => {
      abort.abort();
      for (const t of pending.values()) clearTimeout(t);
      pending.clear();
    };
  }, [path, sessionKey]);

  useEffect(() => { log.current?.scrollTo({ top: log.current.scrollHeight }); }, [lines]);

  const send = async (e: FormEvent) => {
    e.preventDefault();
    const message = text.trim();
    if (!message) return;
    setText('');
    add({ kind: 'user', text: message });
    setSending(true);
    try {
      const accepted = await request('POST', `${path}/messages`, Contract.DebugChatAccepted, { body: { text: message }, headers: sessionHeaders });
      setSessionId(accepted.sessionId);
      timers.current.set(accepted.queryId, setTimeout(() => {
        timers.current.delete(accepted.queryId);
        add({ kind: 'error', text: t('chat.timeout'), queryId: accepted.queryId });
      }, REPLY_TIMEOUT_MS));
    } catch (err) {
      add({ kind: 'error', text: t('chat.notAccepted', { detail: describeError(err, i18n) }) });
    } finally {
      setSending(false);
    }
  };

  const reset = async () => {
    try {
      await request('POST', `${path}/reset`, Contract.DebugChatReset, { headers: sessionHeaders });
      const next = newSessionKey();
      sessionStorage.setItem(sessionKeyItem(botId), next);
      setSessionKey(next);
      setSessionId(undefined);
      setLines([{ key: crypto.randomUUID(), kind: 'system', text: t('chat.resetDone') }]);
    } catch (err) {
      add({ kind: 'error', text: t('chat.resetFailed', { detail: describeError(err, i18n) }) });
    }
  };

  return (
    <div className="chat">
      <div className="chat-status">
        <span className={connected ? 'dot on' : 'dot'} /> {connected ? t('chat.connected') : t('chat.connecting')} {sessionId ? <span className="muted mono">{richText(i18n, 'chat.session', { id: <span translate="no">{sessionId}</span> })}</span> : null}
        <button type="button" className="link" onClick={() => void reset()}>{t('chat.reset')}</button>
      </div>
      <div className="chat-log" ref={log} aria-live="polite">
        {lines.map((l) => (
          <div key={l.key} className={`msg ${l.kind}${l.streaming ? ' streaming' : ''}`} data-query={l.queryId}>
            <div className="msg-text" translate={l.kind === 'user' || l.kind === 'bot' ? 'no' : undefined}>{l.text}</div>
            {l.queryId && l.kind !== 'user' && !l.streaming ? <a className="msg-query" href={formatRoute({ page: 'queries', id: l.queryId })}>{t('chat.queryLog')}</a> : null}
          </div>
        ))}
      </div>
      <form className="chat-input" onSubmit={(e) => void send(e)}>
        <input id="chat-text" aria-label={t('chat.message')} placeholder={t('chat.placeholder')} value={text} onChange={(e) => setText(e.target.value)} maxLength={10_000} autoComplete="off" />
        <button id="chat-send" type="submit" disabled={sending || !text.trim()}>{sending ? t('chat.sending') : t('chat.send')}</button>
      </form>
    </div>
  );
}
