// LangBot's instance-wide settings as the stages use them: what the admin API stored wins, and each
// value it leaves unset falls back to the deployment's own default (environment, ban-word file).
import type { AdminApi } from '@conveyor/contracts';
import type { BanWords } from './ports.js';

/** The deployment's defaults: the orchestrator's COMMAND_ENABLE / COMMAND_PREFIX and the ban-word file. */
export interface InstanceDefaults {
  commandEnable: boolean;
  commandPrefix: string[];
  banWords: BanWords;
}

export interface EffectiveInstanceSettings {
  /** The prefixes MessageProcessor treats as commands; none when commands are off. */
  commandPrefixes: string[];
  /** Chats (`person:<id>`, `group:<id>`) whose commands run with admin privilege. */
  commandAdmins: ReadonlySet<string>;
  banWords: BanWords;
}

export function effectiveInstanceSettings(stored: AdminApi.InstanceSettingsValues, defaults: InstanceDefaults): EffectiveInstanceSettings {
  const enable = stored.command.enable ?? defaults.commandEnable;
  const prefix = stored.command.prefix ?? defaults.commandPrefix;
  const banWords = stored.banWords ? { mask: stored.banWords.mask, maskWord: stored.banWords.mask_word, words: stored.banWords.words } : defaults.banWords;
  return { commandPrefixes: enable ? prefix : [], commandAdmins: new Set(stored.command.admins ?? []), banWords };
}
