import type { MessageChain } from '@conveyor/contracts';
import { isGroup, type PipelineQuery } from '../engine/query.js';
import { CONTINUE, interrupt, type StageResult } from '../engine/result.js';
import type { StageFactory } from '../engine/stage.js';
import { firstMatch, UnsafeRegexError } from '../regex/safe-regex.js';
import { chainText } from '../text/chain.js';

type Rules = PipelineQuery['config']['trigger']['group-respond-rules'];
type Rule = (q: PipelineQuery, rules: Rules, random: () => number) => MessageChain | null;

/** Removes the first At to the bot, twice (a reply can mention it twice); the removal happens even when the rule does not match. */
const atBot: Rule = (q, rules) => {
  let found = false;
  for (let n = 0; n < 2; n++) {
    const i = q.messageChain.findIndex((c) => c.type === 'At' && String(c.target) === q.botAccountId);
    if (i < 0) break;
    q.messageChain = q.messageChain.filter((_, j) => j !== i);
    found = true;
  }
  return found && rules.at ? q.messageChain : null;
};

/** Strips the matched prefix once, from the start of the text (LangBot strips it from every Plain). */
function stripLeading(chain: MessageChain, count: number): MessageChain {
  let remaining = count;
  const out: MessageChain = [];
  for (const c of chain) {
    if (remaining > 0 && c.type === 'Plain') {
      const chars = [...c.text];
      const take = Math.min(remaining, chars.length);
      remaining -= take;
      out.push({ ...c, text: chars.slice(take).join('') });
    } else {
      if (c.type !== 'Source') remaining = 0;
      out.push(c);
    }
  }
  return out;
}

const prefix: Rule = (q, rules) => {
  const text = chainText(q.messageChain);
  const hit = rules.prefix.find((p) => text.startsWith(p));
  return hit === undefined ? null : stripLeading(q.messageChain, [...hit].length);
};

const regexp: Rule = (q, rules) => {
  if (rules.regexp.length === 0) return null;
  try {
    return firstMatch(rules.regexp, chainText(q.messageChain), 'match') >= 0 ? q.messageChain : null;
  } catch (err) {
    if (err instanceof UnsafeRegexError) return null;
    throw err;
  }
};

const randomRule: Rule = (q, rules, random) => (random() < rules.random ? q.messageChain : null);

/** A fixed order: LangBot's is its rule modules' import order (os.listdir), which depends on the filesystem. */
const RULES: Rule[] = [atBot, prefix, regexp, randomRule];

/** LangBot's GroupRespondRuleCheckStage: group messages go on only when a rule matches; silent otherwise. */
export const groupRespondRuleCheck: StageFactory = ({ name, config, deps }) => ({
  name,
  process(q): StageResult {
    if (!isGroup(q) || q.variables._routed_by_rule === true) return CONTINUE;
    const rules = config.trigger['group-respond-rules'];
    for (const rule of RULES) {
      const replacement = rule(q, rules, deps.random ?? Math.random);
      if (replacement) {
        q.messageChain = replacement;
        return CONTINUE;
      }
    }
    return interrupt();
  },
});
