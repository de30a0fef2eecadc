import { need, type PipelineDeps } from '../engine/ports.js';
import type { PipelineQuery } from '../engine/query.js';

/**
 * Built-in commands. LangBot instantiates its operators but dispatches only plugin commands, so its
 * built-ins never answer; here `help`, `reset` and `list` do. A command returns its reply texts; an
 * unknown one answers LangBot's `未知命令: <cmd>`.
 */
interface Command {
  help: string;
  run(q: PipelineQuery, params: string[], deps: PipelineDeps): Promise<string[]>;
}

const COMMANDS: Record<string, Command> = {
  help: {
    help: '显示帮助',
    async run(q, _p, deps) {
      const prefix = deps.commandPrefixes?.[0] ?? '!';
      const own = Object.entries(COMMANDS).map(([n, c]) => `${prefix}${n}: ${c.help}`);
      const plugins = (deps.plugins?.commands(q) ?? []).filter((c) => !Object.hasOwn(COMMANDS, c.name)).map((c) => `${prefix}${c.name}: ${c.help}`);
      return [['可用命令:', ...own, ...plugins].join('\n')];
    },
  },
  reset: {
    help: '重置当前会话',
    async run(q, _p, deps) {
      await need(deps, 'commands', 'MessageProcessor').resetConversation(q);
      return ['会话已重置'];
    },
  },
  list: {
    help: '列出可用命令',
    async run(q, p, deps) {
      return COMMANDS.help.run(q, p, deps);
    },
  },
};

export function unknownCommand(cmd: string): string {
  return `未知命令: ${cmd}`;
}

/** LangBot's reply to a command that needs admin privilege from a chat that has none. */
export function notPermitted(cmd: string): string {
  return `权限不足: ${cmd}`;
}

/** A command a plugin could not run: what the chat is told. */
export function commandFailed(cmd: string, reason: string): string {
  return `命令执行失败: ${cmd}: ${reason}`;
}

/** Whether the query's chat is an admin's: in a group the group counts, as LangBot's bot admins do. */
export function isCommandAdmin(q: Pick<PipelineQuery, 'route'>, admins: ReadonlySet<string> | undefined): boolean {
  return admins?.has(`${q.route.launcherType}:${q.route.launcherId}`) ?? false;
}

/**
 * The replies for a command text without its prefix (split on single spaces, as LangBot does): a
 * built-in, else a command of a plugin the pipeline binds (admin-only ones for admins' chats only).
 */
export async function executeCommand(q: PipelineQuery, commandText: string, deps: PipelineDeps): Promise<string[]> {
  const [cmd, ...params] = commandText.split(' ');
  const command = Object.hasOwn(COMMANDS, cmd) ? COMMANDS[cmd] : undefined;
  if (command) return command.run(q, params, deps);
  const plugin = deps.plugins?.commands(q).find((c) => c.name === cmd);
  if (!plugin) return [unknownCommand(cmd)];
  const isAdmin = isCommandAdmin(q, deps.commandAdmins);
  if (plugin.adminOnly && !isAdmin) return [notPermitted(cmd)];
  try {
    return [await deps.plugins!.runCommand(q, cmd, { params, text_message: commandText, is_admin: isAdmin })];
  } catch (err) {
    if (deps.isOutage?.(err)) throw err;
    deps.logger.warn({ queryId: q.queryId, command: cmd, err: (err as Error).message }, 'plugin command failed');
    return [commandFailed(cmd, (err as Error).message)];
  }
}
