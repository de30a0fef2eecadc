// What `npm start` shows a person: each service's JSON log goes whole to its file under the data
// folder's logs/; the terminal gets its warnings and errors as one readable line each (and any line
// that is not JSON, such as a crash's stack), or, with --verbose, every line as the service wrote it.
import { createWriteStream } from 'node:fs';

const LEVELS = { 40: 'warning', 50: 'error', 60: 'fatal' };

/** One log line as a person reads it: `warning: message (err: ...)`, or null when it is below a warning. */
export function readableLine(line) {
  let entry;
  try {
    entry = JSON.parse(line);
  } catch {
    return line;
  }
  if (typeof entry !== 'object' || entry === null || typeof entry.level !== 'number') return line;
  if (entry.level < 40) return null;
  const level = LEVELS[Math.min(60, Math.floor(entry.level / 10) * 10)] ?? 'warning';
  const err = entry.err?.message ?? (typeof entry.err === 'string' ? entry.err : undefined) ?? entry.reason;
  return `${level}: ${entry.msg ?? ''}${err ? ` (${err})` : ''}`;
}

/**
 * Takes a service's output stream by stream: every line to `logFile`; to the terminal through
 * `print` (already tagged with the service's name) as --verbose or the readable filter says.
 */
export function serviceOutput({ logFile, verbose, print }) {
  const file = createWriteStream(logFile, { flags: 'a' });
  const handle = (line) => {
    file.write(`${line}\n`);
    const shown = verbose ? line : readableLine(line);
    if (shown !== null && shown !== '') print(shown);
  };
  return {
    attach(stream) {
      let buf = '';
      stream.on('data', (d) => {
        buf += d;
        const lines = buf.split('\n');
        buf = lines.pop();
        for (const line of lines) handle(line);
      });
      stream.on('end', () => {
        if (buf) handle(buf);
        buf = '';
      });
    },
    close: () => new Promise((resolve) => file.end(resolve)),
  };
}
