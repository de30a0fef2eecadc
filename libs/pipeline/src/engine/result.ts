import type { MessageChain } from '@conveyor/contracts';

/** LangBot's StageProcessResult, as a tagged union. The query itself is the shared context. */
export interface StageResult {
  type: 'continue' | 'interrupt';
  /** Sent to the user (at-sender in groups). */
  userNotice?: string | MessageChain;
  /** Logged at INFO. */
  consoleNotice?: string;
  /** Logged at DEBUG. */
  debugNotice?: string;
  /** Logged at ERROR; marks the query failed. */
  errorNotice?: string;
}

export type Notices = Omit<StageResult, 'type'>;

export const CONTINUE: StageResult = Object.freeze({ type: 'continue' });

export function proceed(notices: Notices = {}): StageResult {
  return { type: 'continue', ...notices };
}

export function interrupt(notices: Notices = {}): StageResult {
  return { type: 'interrupt', ...notices };
}
