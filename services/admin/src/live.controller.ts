import { Controller, Inject, Injectable, Query, Sse, type MessageEvent, type OnModuleDestroy } from '@nestjs/common';
import { Observable } from 'rxjs';
import type { Subscription } from '@nats-io/transport-node';
import { AdminApi, QueryEnvelope, RunnerEvent, TakeoverEvent } from '@conveyor/contracts';
import { LiveConversations, liveChatKey, type ConfigStore } from '@conveyor/admin';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { parse } from './http.js';
import { CONFIG_STORE } from './tokens.js';

/** How long the replica keeps hearing the bus after its last viewer left, so a page opened again still lists the chats. */
const LINGER_MS = 30 * 60_000;
/** A comment line this often keeps proxies from closing an idle stream. */
const KEEPALIVE_MS = 15_000;

const decoder = new TextDecoder();

/**
 * The bus as live conversations: while someone watches (and for a while after), this replica hears
 * every query and runner event with a core NATS subscription beside the streams' consumers, so any
 * admin replica serves any viewer and nothing polls the database.
 */
@Injectable()
export class LiveFeed implements OnModuleDestroy {
  readonly live = new LiveConversations();
  private subscriptions: Subscription[] = [];
  private viewers = 0;
  private linger: NodeJS.Timeout | undefined;

  constructor(@Inject(INFRA) private readonly infra: Infra) {}

  /** A viewer arrived: hear the bus if not yet. Returns the release to call when it leaves. */
  watch(): () => void {
    this.viewers += 1;
    clearTimeout(this.linger);
    if (this.subscriptions.length === 0) this.listen();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.viewers -= 1;
      if (this.viewers === 0) {
        this.linger = setTimeout(() => this.stopListening(), LINGER_MS);
        this.linger.unref();
      }
    };
  }

  private listen(): void {
    const { streams } = this.infra.topology;
    const feed = (subjects: readonly string[], take: (body: unknown) => void) => subjects.map((subject) => this.infra.nc.subscribe(subject, {
      callback: (err, msg) => {
        if (err) return;
        try {
          take(JSON.parse(decoder.decode(msg.data)));
        } catch {
          // Not JSON: nothing a transcript can show.
        }
      },
    }));
    this.subscriptions = [
      ...feed(streams.queries.subjects, (body) => {
        const q = QueryEnvelope.safeParse(body);
        if (q.success) this.live.onQuery(q.data);
      }),
      ...feed(streams.events.subjects, (body) => {
        const e = RunnerEvent.safeParse(body);
        if (e.success) this.live.onEvent(e.data);
      }),
      ...feed([this.infra.topology.subjects.takeoverEvents], (body) => {
        const e = TakeoverEvent.safeParse(body);
        if (e.success) this.live.onTakeover(e.data);
      }),
    ];
  }

  private stopListening(): void {
    for (const s of this.subscriptions) s.unsubscribe();
    this.subscriptions = [];
  }

  onModuleDestroy(): void {
    clearTimeout(this.linger);
    this.stopListening();
  }
}

/**
 * Server-sent events of live conversations: the chats with recent traffic, and one chat's transcript
 * as it happens. Each stream starts with a `snapshot` and then sends each change (`session`, `entry`);
 * message text only when `monitoring.showMessageText` is on (read when the stream opens).
 */
@Controller('api/v1/live')
export class LiveController {
  constructor(private readonly feed: LiveFeed, @Inject(CONFIG_STORE) private readonly store: ConfigStore) {}

  @Sse('sessions')
  sessions(): Observable<MessageEvent> {
    return this.stream((shown) => ({ textShown: shown, sessions: this.feed.live.list(shown) }), (change, shown) => (change.type === 'session' ? { type: 'session', data: change.session(shown) } : null));
  }

  @Sse('transcript')
  transcript(@Query() query: unknown): Observable<MessageEvent> {
    const chat = parse(AdminApi.LiveTranscriptFilter, query, 'query');
    const key = liveChatKey(chat);
    return this.stream(
      (shown) => ({ textShown: shown, session: this.feed.live.session(chat, shown), entries: this.feed.live.transcript(chat, shown) }),
      (change, shown) => (change.key !== key ? null : change.type === 'entry' ? { type: 'entry', data: change.entry(shown) } : { type: 'session', data: change.session(shown) }),
    );
  }

  private stream(snapshot: (shown: boolean) => object, map: (change: Parameters<Parameters<LiveConversations['subscribe']>[0]>[0], shown: boolean) => MessageEvent | null): Observable<MessageEvent> {
    return new Observable<MessageEvent>((observer) => {
      const release = this.feed.watch();
      let unsubscribe = () => {};
      const keepalive = setInterval(() => observer.next({ type: 'keepalive', data: '' }), KEEPALIVE_MS);
      void this.store.getSettings().then((settings) => {
        const shown = settings.monitoring.showMessageText === true;
        observer.next({ type: 'snapshot', data: snapshot(shown) });
        unsubscribe = this.feed.live.subscribe((change) => {
          const event = map(change, shown);
          if (event) observer.next(event);
        });
      }, (err: unknown) => observer.error(err));
      return () => {
        clearInterval(keepalive);
        unsubscribe();
        release();
      };
    });
  }
}
