/**
 * A benchmark's command line: its `--name=value` flags (a bare `--name` reads as '') and its positional
 * arguments, in order.
 */
export function commandLine(argv: readonly string[] = process.argv.slice(2)): { flags: Map<string, string>; positional: string[] } {
  const flags = new Map<string, string>();
  const positional: string[] = [];
  for (const arg of argv) {
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const [name = '', value = ''] = arg.slice(2).split('=');
    flags.set(name, value);
  }
  return { flags, positional };
}
