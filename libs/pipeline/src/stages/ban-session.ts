import { CONTINUE, interrupt } from '../engine/result.js';
import type { StageFactory } from '../engine/stage.js';

/** LangBot's BanSessionCheckStage. Ids travel as strings here, so `*_<id>` works for numeric ids too (LangBot's does not). */
export const banSessionCheck: StageFactory = ({ name, config }) => ({
  name,
  process(q) {
    const acl = config.trigger['access-control'];
    const list = acl[acl.mode];
    const { launcherType, launcherId, senderId } = q.route;
    const found = list.some(
      (entry) =>
        entry === `${launcherType}_*` ||
        entry === `${launcherType}_${launcherId}` ||
        (entry.startsWith('*_') && (entry.slice(2) === launcherId || entry.slice(2) === senderId)),
    );
    if ((acl.mode === 'whitelist') === found) return CONTINUE;
    return interrupt({ consoleNotice: `Ignore message according to access control: ${launcherType}_${launcherId}` });
  },
});
