import { CONTINUE, interrupt, type StageResult } from '../engine/result.js';
import type { StageFactory } from '../engine/stage.js';
import type { PipelineQuery, RespItem } from '../engine/query.js';
import { banWordFilter } from '../filters/ban-words.js';
import { contentIgnore } from '../filters/content-ignore.js';
import type { ContentFilter } from '../filters/filter.js';
import { chainText, isTextOnly } from '../text/chain.js';
import { messageText } from '@conveyor/contracts';

/**
 * LangBot's PreContentFilterStage / PostContentFilterStage: one class under two names. The chain is
 * fixed at load: content-ignore, then ban words when `check-sensitive-words` is on (LangBot's order
 * depends on the filesystem).
 */
export const contentFilter: StageFactory = ({ name, config, deps }) => {
  const filters: ContentFilter[] = [contentIgnore(config)];
  if (config.safety['content-filter']['check-sensitive-words'] && deps.banWords && deps.banWords.words.length > 0) {
    filters.push(banWordFilter(deps.banWords));
  }
  const scope = config.safety['content-filter'].scope;
  const pre = filters.filter((f) => f.stages.includes('pre'));
  const post = filters.filter((f) => f.stages.includes('post'));
  return {
    name,
    process: name === 'PostContentFilterStage' ? (q) => postFilter(q, post, scope) : (q) => preFilter(q, pre, scope),
  };
};

function preFilter(q: PipelineQuery, filters: ContentFilter[], scope: string): StageResult {
  // Messages with anything but text (an image, file, quote, a leftover At) skip the filters, as in LangBot;
  // kept on purpose, since an image cannot be checked.
  if (!isTextOnly(q.messageChain)) return CONTINUE;
  let message = chainText(q.messageChain).trim();
  if (scope === 'output-msg' || message === '') return CONTINUE;
  for (const f of filters) {
    const r = f.check(message);
    if (r.level === 'block' || r.level === 'masked') return interrupt({ userNotice: r.userNotice, consoleNotice: r.consoleNotice });
    if (r.level === 'pass') message = r.replacement;
  }
  q.messageChain = [{ type: 'Plain', text: message }];
  return CONTINUE;
}

/** Streamed chunks are filtered too (LangBot skips them, so banned words leak whenever a bot streams). */
function postFilter(q: PipelineQuery, filters: ContentFilter[], scope: string): StageResult {
  const item = q.respMessages.at(-1);
  const text = item ? itemText(item) : null;
  if (!item || text === null || scope === 'income-msg') return CONTINUE;
  let message = text.trim();
  for (const f of filters) {
    const r = f.check(message);
    if (r.level === 'block') return interrupt({ userNotice: r.userNotice, consoleNotice: r.consoleNotice });
    if (r.level === 'pass' || r.level === 'masked') message = r.replacement;
  }
  setItemText(item, message);
  return CONTINUE;
}

function itemText(item: RespItem): string | null {
  // A plugin's reply chain is the plugin's own answer; like LangBot, the output filter leaves it alone.
  if (item.kind === 'plugin') return null;
  if (item.kind === 'chunk' || item.kind === 'command') return item.text;
  return typeof item.message.content === 'string' ? item.message.content : item.message.content === null ? null : messageText(item.message);
}

function setItemText(item: RespItem, text: string): void {
  if (item.kind === 'plugin') return;
  if (item.kind === 'chunk' || item.kind === 'command') item.text = text;
  else if (typeof item.message.content === 'string') item.message = { ...item.message, content: text };
  else if (Array.isArray(item.message.content)) {
    // Text parts collapse into one masked part; images stay.
    item.message = { ...item.message, content: [{ type: 'text', text }, ...item.message.content.filter((p) => p.type !== 'text')] };
  }
}
