import type { BanWords } from '../engine/ports.js';
import { maskAll, UnsafeRegexError } from '../regex/safe-regex.js';
import type { ContentFilter } from './filter.js';

export const BAN_WORD_NOTICE = '消息中存在不合适的内容, 请修改';
export const BAN_WORD_FAILURE_NOTICE = '内容检查规则执行失败，请联系管理员';

/** `ban-word-filter`: masks the deployment's banned patterns; in and out. */
export function banWordFilter(list: BanWords): ContentFilter {
  return {
    name: 'ban-word-filter',
    stages: ['pre', 'post'],
    check(message) {
      try {
        const { text, matched } = maskAll(list.words, message, list.mask || '*', list.maskWord);
        if (!matched) return { level: 'pass', replacement: message };
        return { level: 'masked', replacement: text, userNotice: BAN_WORD_NOTICE, consoleNotice: `[ban-word-filter] masked: ${text}` };
      } catch (err) {
        if (!(err instanceof UnsafeRegexError)) throw err;
        return { level: 'block', replacement: message, userNotice: BAN_WORD_FAILURE_NOTICE, consoleNotice: `[ban-word-filter] rule failed: ${err.message}` };
      }
    },
  };
}
