import type { EventContext } from '@conveyor/plugin-sdk';

export interface KeywordSettings {
  /** A message containing this gets `answer` as the reply, and no runner is called. */
  keyword: string;
  answer: string;
  /** A message containing this is dropped without a reply. */
  silenceWord: string;
  /** Every other message reaches the runner with this in front. */
  rewritePrefix: string;
}

/** The plugin's decision for one received message, LangBot's three interventions. */
export function onNormalMessage(settings: KeywordSettings, ctx: EventContext<'PersonNormalMessageReceived'> | EventContext<'GroupNormalMessageReceived'>): void {
  const text = ctx.event.text_message;
  if (text.includes(settings.keyword)) {
    ctx.reply([{ type: 'Plain', text: settings.answer }]);
    ctx.preventDefault();
  } else if (text.includes(settings.silenceWord)) {
    ctx.preventDefault();
  } else {
    ctx.alterUserMessage(`${settings.rewritePrefix}${text}`);
  }
}
