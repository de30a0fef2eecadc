export interface MemoryLine {
  level: string;
  obj: object;
  msg?: string;
}

/** A logger that keeps what it was given, for assertions; it fits the packages' logger ports. */
export function memoryLogger(): {
  lines: MemoryLine[];
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
} {
  const lines: MemoryLine[] = [];
  const at = (level: string) => (obj: object, msg?: string) => void lines.push({ level, obj, msg });
  return { lines, info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') };
}
