import type { ContentPart, LlmMessage, PluginEventName, PluginEventPayload } from '@conveyor/contracts';
import { noPluginOutcome, type PluginEventOutcome } from '@conveyor/contracts';
import type { PipelineDeps } from '../engine/ports.js';
import { isGroup, type PipelineQuery } from '../engine/query.js';
import { chainText } from '../text/chain.js';

// Where LangBot's pipeline emits plugin events, as plain functions of the query: the stages (and the
// orchestrator, for the event before any stage) call these, and the plugin port does the transport.

function launcher(q: PipelineQuery) {
  return { launcher_type: q.route.launcherType, launcher_id: q.route.launcherId, sender_id: q.route.senderId };
}

async function emit(q: PipelineQuery, deps: PipelineDeps, event: PluginEventPayload): Promise<PluginEventOutcome> {
  return deps.plugins ? deps.plugins.emit(q, event) : noPluginOutcome();
}

/**
 * `PersonMessageReceived` / `GroupMessageReceived`, before any stage (LangBot's `process_query`).
 * True when a plugin prevented the default: the query ends there, with no reply.
 */
export async function emitMessageReceived(q: PipelineQuery, deps: PipelineDeps): Promise<boolean> {
  const outcome = await emit(q, deps, {
    event_name: messageReceivedEvent(q),
    ...launcher(q),
    message_chain: q.messageChain,
  });
  return outcome.preventDefault;
}

function messageReceivedEvent(q: PipelineQuery): Extract<PluginEventName, 'GroupMessageReceived' | 'PersonMessageReceived'> {
  return isGroup(q) ? 'GroupMessageReceived' : 'PersonMessageReceived';
}

/**
 * Whether `emitMessageReceived` would call a plugin now. Only then must the query's stages wait for
 * it: the event comes before any stage, and a plugin may answer it in the session's order.
 */
export function messageReceivedListened(q: PipelineQuery, deps: Pick<PipelineDeps, 'plugins'>): boolean {
  return deps.plugins?.listens(q, messageReceivedEvent(q)) ?? false;
}

/** `PersonNormalMessageReceived` / `GroupNormalMessageReceived`, in the chat handler before a runner is chosen. */
export function emitNormalMessageReceived(q: PipelineQuery, deps: PipelineDeps): Promise<PluginEventOutcome> {
  return emit(q, deps, {
    event_name: isGroup(q) ? 'GroupNormalMessageReceived' : 'PersonNormalMessageReceived',
    ...launcher(q),
    text_message: chainText(q.messageChain),
    message_chain: q.messageChain,
  });
}

/**
 * `PersonCommandSent` / `GroupCommandSent` in the command handler, before the command runs: a plugin
 * may prevent it (answering with its chain, or nothing).
 */
export function emitCommandSent(q: PipelineQuery, deps: PipelineDeps, command: { command: string; params: string[]; text: string; isAdmin: boolean }): Promise<PluginEventOutcome> {
  return emit(q, deps, {
    event_name: isGroup(q) ? 'GroupCommandSent' : 'PersonCommandSent',
    ...launcher(q),
    command: command.command,
    params: command.params,
    text_message: command.text,
    is_admin: command.isAdmin,
  });
}

/** `PromptPreProcessing` in PreProcessor: plugins may replace the preset (`default_prompt`) and the history (`prompt`). */
export async function emitPromptPreProcessing(q: PipelineQuery, deps: PipelineDeps): Promise<void> {
  if (!deps.plugins) return;
  const outcome = await emit(q, deps, {
    event_name: 'PromptPreProcessing',
    session_name: `${q.route.launcherType}_${q.route.launcherId}`,
    default_prompt: q.prompt,
    prompt: q.messages,
  });
  if (outcome.defaultPrompt) q.prompt = outcome.defaultPrompt;
  if (outcome.prompt) q.messages = outcome.prompt;
}

/** `NormalMessageResponded` in ResponseWrapper, for one assistant text the user is about to get. */
export function emitNormalMessageResponded(q: PipelineQuery, deps: PipelineDeps, responseText: string, funcsCalled: string[]): Promise<PluginEventOutcome> {
  return emit(q, deps, {
    event_name: 'NormalMessageResponded',
    ...launcher(q),
    prefix: '',
    response_text: responseText,
    finish_reason: 'stop',
    funcs_called: funcsCalled,
  });
}

/** LangBot's `user_message_alter`: a list replaces the content, a string becomes one text element, an element becomes a list of it. */
export function alteredUserMessage(message: LlmMessage, alter: string | ContentPart | ContentPart[]): LlmMessage {
  const content: ContentPart[] = typeof alter === 'string' ? [{ type: 'text', text: alter }] : Array.isArray(alter) ? alter : [alter];
  // One text part is sent as a plain string, the shape the user turn has everywhere else.
  return { ...message, content: content.length === 1 && content[0].type === 'text' ? content[0].text : content };
}
