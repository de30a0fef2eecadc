/**
 * The logging surface the bus needs: pino-compatible `(obj, msg)` calls, so a pino logger (or a child
 * of one) can be passed as is.
 */
export interface BusLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  debug?(obj: object, msg?: string): void;
}

export const silentLogger: BusLogger = {
  info() {},
  warn() {},
  error() {},
  debug() {},
};

/** Error fields that survive JSON logging (an Error's own fields are not enumerable). */
export function errorFields(err: unknown): { err: { name: string; message: string; stack?: string } } {
  if (err instanceof Error) return { err: { name: err.name, message: err.message, stack: err.stack } };
  return { err: { name: 'NonError', message: String(err) } };
}
