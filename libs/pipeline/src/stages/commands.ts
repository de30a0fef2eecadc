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
    async run(_q, _p, deps) {
      const prefix = deps.commandPrefixes?.[0] ?? '!';
      return [['可用命令:', ...Object.entries(COMMANDS).map(([n, c]) => `${prefix}${n}: ${c.help}`)].join('\n')];
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

/** The replies for a command text without its prefix (split on single spaces, as LangBot does). */
export async function executeCommand(q: PipelineQuery, commandText: string, deps: PipelineDeps): Promise<string[]> {
  const [cmd, ...params] = commandText.split(' ');
  const command = Object.hasOwn(COMMANDS, cmd) ? COMMANDS[cmd] : undefined;
  if (!command) return [unknownCommand(cmd)];
  return command.run(q, params, deps);
}
