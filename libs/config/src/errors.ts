export interface ConfigIssue {
  /** Key path in the file, e.g. `bots[0].pipeline`; empty for the file as a whole. */
  path: string;
  message: string;
}

/** An unusable config file. The message names the file, and the key path and problem of each issue. */
export class ConfigFileError extends Error {
  override name = 'ConfigFileError';

  constructor(readonly file: string, readonly issues: ConfigIssue[]) {
    super(issues.map((issue) => `${file}: ${issue.path ? `${issue.path}: ` : ''}${issue.message}`).join('\n'));
  }
}

/** `['bots', 0, 'config', 'inbound_secret']` → `bots[0].config.inbound_secret`. */
export function formatKeyPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out ? `.${String(key)}` : String(key);
  }
  return out;
}
