// Live conversations as an admin replica sees them on the bus: every inbound query and every runner
// event is published to NATS, so each replica hears all of them (a core subscription beside the
// streams' consumers) and keeps the chats with recent traffic and their last lines in memory, bounded.
// Nothing is read from the database: a replica that starts knows the traffic from then on.
import { LRUCache } from 'lru-cache';
import { plainText, type AdminApi, type LlmMessage, type QueryEnvelope, type RunnerEvent, type TakeoverEvent } from '@conveyor/contracts';

export interface LiveConversationsOptions {
  /** Chats kept; the least recently active go first. Default 1,000. */
  maxSessions?: number;
  /** Lines kept per chat. Default 100. */
  linesPerSession?: number;
  /** A chat without traffic for this long leaves the list. Default 30 minutes. */
  activeForMs?: number;
  /** Characters of a line kept (a long reply is cut). Default 20,000. */
  maxChars?: number;
  now?: () => number;
}

interface Line {
  id: string;
  queryId: string;
  role: AdminApi.LiveEntry['role'];
  at: number;
  text: string;
  final: boolean;
}

interface Session {
  botId: string;
  adapter: string;
  launcherType: string;
  launcherId: string;
  senderName: string;
  lastMessage: string;
  lastActivityAt: number;
  /** Queries of this chat whose reply has not ended. */
  replying: Set<string>;
  /** The operator answering it instead of the bot. */
  takenOverBy: string | null;
  /** Since when it waits for a person (it asked, and no operator took it yet). */
  waitingSince: number | null;
  lines: Line[];
}

/** A change: a chat's new state, or a line added or grown. */
export type LiveChange =
  | { type: 'session'; key: string; session: (textShown: boolean) => AdminApi.LiveSession }
  | { type: 'entry'; key: string; entry: (textShown: boolean) => AdminApi.LiveEntry };

/** The key of a chat: bot, launcher type and id (as the sessions page and conversations name a chat). */
export function liveChatKey(chat: { botId: string; launcherType: string; launcherId: string }): string {
  return JSON.stringify([chat.botId, chat.launcherType, chat.launcherId]);
}

const messageText = (message: LlmMessage) =>
  typeof message.content === 'string' ? message.content : (message.content ?? []).map((p) => (p.type === 'text' ? p.text : '')).join('');

export class LiveConversations {
  private readonly sessions: LRUCache<string, Session>;
  private readonly listeners = new Set<(change: LiveChange) => void>();
  private readonly linesPerSession: number;
  private readonly maxChars: number;
  private readonly activeForMs: number;
  private readonly now: () => number;

  constructor(options: LiveConversationsOptions = {}) {
    this.now = options.now ?? Date.now;
    this.linesPerSession = options.linesPerSession ?? 100;
    this.maxChars = options.maxChars ?? 20_000;
    this.activeForMs = options.activeForMs ?? 30 * 60_000;
    this.sessions = new LRUCache({ max: options.maxSessions ?? 1_000 });
  }

  /** Calls `listener` with every change until the returned function is called. */
  subscribe(listener: (change: LiveChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The chats with traffic lately, most recent first. */
  list(textShown: boolean): AdminApi.LiveSession[] {
    return [...this.sessions.values()].filter((s) => this.active(s)).sort((a, b) => b.lastActivityAt - a.lastActivityAt).map((s) => this.sessionView(s, textShown));
  }

  /** A chat's state; null for a chat without recent traffic. */
  session(chat: { botId: string; launcherType: string; launcherId: string }, textShown: boolean): AdminApi.LiveSession | null {
    const session = this.sessions.peek(liveChatKey(chat));
    return session && this.active(session) ? this.sessionView(session, textShown) : null;
  }

  /** A chat's last lines, oldest first; empty for a chat without recent traffic. */
  transcript(chat: { botId: string; launcherType: string; launcherId: string }, textShown: boolean): AdminApi.LiveEntry[] {
    const session = this.sessions.peek(liveChatKey(chat));
    return session && this.active(session) ? session.lines.map((l) => this.entryView(l, textShown)) : [];
  }

  /** An inbound message (a query published by an ingress or gateway). */
  onQuery(q: QueryEnvelope): void {
    const { route } = q;
    const key = liveChatKey(route);
    const text = this.cut(plainText(q.messageChain));
    const session = this.sessions.get(key) ?? this.newSession(route.botId, route.adapter, route.launcherType, route.launcherId);
    session.adapter = route.adapter;
    session.senderName = q.senderName;
    session.lastMessage = text;
    session.lastActivityAt = this.now();
    session.replying.add(q.queryId);
    this.sessions.set(key, session);
    this.addLine(key, session, { id: `${q.queryId}:user`, queryId: q.queryId, role: 'user', at: this.now(), text, final: true });
    this.emitSession(key, session);
  }

  /** A runner event (or a notice) on its way to the dispatcher. */
  onEvent(e: RunnerEvent): void {
    const key = liveChatKey(e.route);
    const session = this.sessions.get(key);
    if (!session) return;
    session.lastActivityAt = this.now();
    const reply = `${e.queryId}:bot`;
    switch (e.kind) {
      case 'chunk':
        this.setLine(key, session, { id: reply, queryId: e.queryId, role: 'bot', at: this.now(), text: this.cut(e.text), final: e.isFinal && !e.hasToolCalls });
        break;
      case 'message':
        if (e.message.role === 'assistant' && messageText(e.message)) this.setLine(key, session, { id: reply, queryId: e.queryId, role: 'bot', at: this.now(), text: this.cut(messageText(e.message)), final: true });
        break;
      case 'command_reply':
        this.setLine(key, session, { id: reply, queryId: e.queryId, role: 'bot', at: this.now(), text: this.cut(e.text), final: true });
        break;
      case 'plugin_reply':
        this.setLine(key, session, { id: reply, queryId: e.queryId, role: 'bot', at: this.now(), text: this.cut(plainText(e.chain)), final: true });
        break;
      case 'notice':
        this.addLine(key, session, { id: `${e.queryId}:notice:${e.seq}`, queryId: e.queryId, role: 'notice', at: this.now(), text: this.cut(e.text), final: true });
        break;
      case 'error':
        this.addLine(key, session, { id: `${e.queryId}:error`, queryId: e.queryId, role: 'error', at: this.now(), text: this.cut(e.userText ?? e.error), final: true });
        break;
      default:
        break;
    }
    if (e.last || e.kind === 'done' || e.kind === 'error') session.replying.delete(e.queryId);
    this.emitSession(key, session);
  }

  /** An operator took the chat over, handed it back, or sent it a message; or the chat asked for a person. */
  onTakeover(e: TakeoverEvent): void {
    const key = liveChatKey(e.chat);
    const session = this.sessions.get(key) ?? this.newSession(e.chat.botId, '', e.chat.launcherType, e.chat.launcherId);
    session.lastActivityAt = this.now();
    if (e.kind === 'taken') {
      session.takenOverBy = e.operator;
      session.waitingSince = null;
    }
    if (e.kind === 'returned') session.takenOverBy = null;
    if (e.kind === 'requested') session.waitingSince = Date.parse(e.at);
    if (e.kind === 'dismissed') session.waitingSince = null;
    this.sessions.set(key, session);
    if (e.kind === 'reply') this.addLine(key, session, { id: `op:${e.at}:${session.lines.length}`, queryId: '', role: 'operator', at: this.now(), text: this.cut(e.text ?? ''), final: true });
    this.emitSession(key, session);
  }

  private newSession(botId: string, adapter: string, launcherType: string, launcherId: string): Session {
    return { botId, adapter, launcherType, launcherId, senderName: '', lastMessage: '', lastActivityAt: 0, replying: new Set<string>(), takenOverBy: null, waitingSince: null, lines: [] };
  }

  private active(s: Session): boolean {
    return this.now() - s.lastActivityAt <= this.activeForMs;
  }

  private cut(text: string): string {
    return text.length > this.maxChars ? `${text.slice(0, this.maxChars)}…` : text;
  }

  /** A new line, or a streamed reply's line replaced as it grows. */
  private setLine(key: string, session: Session, line: Line): void {
    const at = session.lines.findIndex((l) => l.id === line.id);
    if (at < 0) return this.addLine(key, session, line);
    session.lines[at] = { ...line, at: session.lines[at].at };
    this.emit({ type: 'entry', key, entry: (shown) => this.entryView(session.lines[at], shown) });
  }

  private addLine(key: string, session: Session, line: Line): void {
    session.lines.push(line);
    if (session.lines.length > this.linesPerSession) session.lines.splice(0, session.lines.length - this.linesPerSession);
    this.emit({ type: 'entry', key, entry: (shown) => this.entryView(line, shown) });
  }

  private emitSession(key: string, session: Session): void {
    this.emit({ type: 'session', key, session: (shown) => this.sessionView(session, shown) });
  }

  private emit(change: LiveChange): void {
    for (const listener of this.listeners) listener(change);
  }

  private sessionView(s: Session, textShown: boolean): AdminApi.LiveSession {
    return {
      botId: s.botId,
      adapter: s.adapter,
      launcherType: s.launcherType,
      launcherId: s.launcherId,
      senderName: s.senderName,
      lastMessage: textShown ? s.lastMessage : null,
      lastMessageChars: s.lastMessage.length,
      lastActivityAt: new Date(s.lastActivityAt).toISOString(),
      replying: s.replying.size > 0,
      takenOverBy: s.takenOverBy,
      waitingSince: s.waitingSince === null ? null : new Date(s.waitingSince).toISOString(),
    };
  }

  private entryView(l: Line, textShown: boolean): AdminApi.LiveEntry {
    return { id: l.id, queryId: l.queryId, role: l.role, at: new Date(l.at).toISOString(), text: textShown ? l.text : null, chars: l.text.length, final: l.final };
  }
}
