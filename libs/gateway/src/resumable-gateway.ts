import type { ConnectionDeps } from '@conveyor/platform-kit';
import { GatewaySession, HeartbeatGatewaySocket, type HeartbeatGatewayOptions } from './heartbeat-gateway.js';
import { SequencedInbound } from './sequenced-inbound.js';
import { ConnectionStateKeeper } from './state-keeper.js';

/** A dispatch that is a message: how to publish it, and its id for the log line when it cannot wait. */
export interface DispatchedMessage {
  publish: () => Promise<void>;
  messageId: string;
}

export interface ResumableGatewayOptions<C> extends Omit<HeartbeatGatewayOptions, 'resume' | 'onDispatch' | 'onSession' | 'onMalformed'> {
  deps: ConnectionDeps<C>;
  /** A dispatch (op 0): the message to publish, or undefined for one that is none (it is handled at once). */
  onDispatch: (event: string, data: unknown, session: GatewaySession | undefined) => DispatchedMessage | undefined;
}

/** An open session: the socket, whether it resumed the stored session, and the connection's end and close. */
export interface ResumableGateway {
  socket: HeartbeatGatewaySocket;
  resumed: boolean;
  ended: Promise<string>;
  close(reason: string): Promise<void>;
}

/**
 * Opens a bot's opcode gateway session (Discord, QQ) resuming the one its connection state holds:
 * dispatches that are messages are published in order (`SequencedInbound`), the sequence number of
 * the last one handled is stored (`ConnectionStateKeeper`) at once when the session begins, resumes
 * or is gone, throttled while it advances, and a last time when the connection ends. The next
 * connection of the bot, on this replica or the one taking it over, resumes from there and the
 * platform replays what it missed; a session that could not be resumed is cleared, so that one
 * identifies anew.
 */
export async function openResumableGateway<C>(o: ResumableGatewayOptions<C>): Promise<ResumableGateway> {
  const { deps, onDispatch, ...socketOptions } = o;
  const state = deps.state(GatewaySession);
  const resume = await state.get();
  const keeper = new ConnectionStateKeeper<GatewaySession>(state, (err) => deps.logger.warn({ err, botId: deps.botId }, `${o.platform} session not stored; the next connection may identify anew`));
  let session: GatewaySession | undefined = resume;
  let handledSeq: number | null = resume?.seq ?? null;
  const inbound = new SequencedInbound({
    onHandled: (seq) => {
      handledSeq = seq;
      if (session) keeper.soon({ ...session, seq });
    },
    onFailed: (err) => deps.logger.warn({ err, botId: deps.botId }, `${o.platform} message not published`),
  });
  const lastWord = () => (session ? { ...session, seq: handledSeq } : null);
  let socket: HeartbeatGatewaySocket;
  try {
    socket = await HeartbeatGatewaySocket.connect({
      ...socketOptions,
      ...(resume ? { resume } : {}),
      onDispatch: (event, data, seq) => {
        if (seq === null) return;
        const message = onDispatch(event, data, session);
        if (!message) return inbound.skip(seq);
        if (!inbound.push(seq, message.publish)) {
          deps.malformed('inbound queue full; message dropped', { messageId: message.messageId });
          inbound.skip(seq);
        }
      },
      onSession: (begun) => {
        session = begun;
        if (!begun) {
          inbound.reset();
          handledSeq = null;
          void keeper.now(null);
          return;
        }
        handledSeq ??= begun.seq;
        void keeper.now({ ...begun, seq: handledSeq });
      },
      onMalformed: (reason) => deps.malformed(reason),
    });
  } catch (err) {
    // A session that could not be resumed (or begun) is not tried again: the next connection identifies.
    await keeper.finish(null);
    throw err;
  }
  return {
    socket,
    resumed: resume !== undefined && socket.resumable()?.sessionId === resume.sessionId,
    ended: socket.ended.then(async (reason) => {
      await keeper.finish(lastWord());
      return reason;
    }),
    close: async (reason) => {
      await socket.close(reason);
      await keeper.finish(lastWord());
    },
  };
}
