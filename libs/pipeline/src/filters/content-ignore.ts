import type { PipelineSettings } from '../config/schema.js';
import { firstMatch, UnsafeRegexError } from '../regex/safe-regex.js';
import type { ContentFilter } from './filter.js';

/** `content-ignore`: silently drops messages that start with an ignore prefix or match an ignore regexp (search mode). */
export function contentIgnore(config: PipelineSettings): ContentFilter {
  const rules = config.trigger['ignore-rules'];
  return {
    name: 'content-ignore',
    stages: ['pre'],
    check(message) {
      if (rules.prefix.some((p) => message.startsWith(p))) {
        return { level: 'block', replacement: message, consoleNotice: 'Ignore message according to prefix rule in ignore_rules' };
      }
      if (rules.regexp.length > 0) {
        try {
          if (firstMatch(rules.regexp, message, 'search') >= 0) {
            return { level: 'block', replacement: message, consoleNotice: 'Ignore message according to regexp rule in ignore_rules' };
          }
        } catch (err) {
          if (!(err instanceof UnsafeRegexError)) throw err;
          return { level: 'block', replacement: message, consoleNotice: `Ignore message: ignore_rules regexp rejected (${err.message})` };
        }
      }
      return { level: 'pass', replacement: message };
    },
  };
}
