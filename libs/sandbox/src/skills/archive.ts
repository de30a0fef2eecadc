import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import * as tar from 'tar';

/** Why an archive (a workspace's, a skill's, an uploaded zip) was refused; `code` says which bound or rule. */
export class ArchiveError extends Error {
  constructor(readonly code: 'too_large' | 'too_many_files' | 'unsafe_path' | 'link' | 'not_an_archive', message: string) {
    super(message);
    this.name = 'ArchiveError';
  }
}

export interface ArchiveBounds {
  /** Bytes of all files together, unpacked. */
  maxBytes: number;
  maxFiles: number;
}

/**
 * A relative path inside an archive, checked: no absolute path, no `..`, no backslash or NUL, no
 * empty part. Returns it normalised (forward slashes, no `./`), or throws ArchiveError `unsafe_path`.
 */
export function safeRelativePath(raw: string): string {
  const parts = raw.split('/').filter((p) => p !== '' && p !== '.');
  if (raw.startsWith('/') || raw.includes('\\') || raw.includes('\0') || /^[A-Za-z]:/.test(raw) || parts.some((p) => p === '..') || parts.length === 0) {
    throw new ArchiveError('unsafe_path', `unsafe path in archive: ${JSON.stringify(raw.slice(0, 200))}`);
  }
  return parts.join('/');
}

/** Packs a folder as a gzipped tar (paths relative to it; links kept as links, never followed). */
export async function packDirectory(dir: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const stream = tar.c({ gzip: true, cwd: dir, portable: true, follow: false }, ['.']);
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** Packs files held in memory (path → bytes) as a gzipped tar. */
export async function packFiles(files: ReadonlyMap<string, Buffer>): Promise<Buffer> {
  const dir = await mkdtemp(path.join(tmpdir(), 'conveyor-pack-'));
  try {
    for (const [name, data] of files) {
      const target = path.join(dir, safeRelativePath(name));
      await mkdir(path.dirname(target), { recursive: true });
      await writeFile(target, data);
    }
    return await packDirectory(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export interface UnpackOptions extends ArchiveBounds {
  /** Owner of what is unpacked (the sandbox's user when the service runs as root). */
  uid?: number;
  gid?: number;
}

/**
 * Unpacks a gzipped tar into an empty folder within bounds: paths are checked (node-tar also refuses
 * `..` and writes through links), sizes are counted as entries arrive, and the first entry past a
 * bound stops it with ArchiveError (the folder is then half-written: the caller removes it).
 */
export async function unpackArchive(archive: Buffer, dir: string, o: UnpackOptions): Promise<{ bytes: number; files: number }> {
  await mkdir(dir, { recursive: true });
  let bytes = 0;
  let files = 0;
  let refused: ArchiveError | undefined;
  const extract = tar.x({
    cwd: dir,
    strict: true,
    preservePaths: false,
    ...(o.uid !== undefined ? { uid: o.uid, gid: o.gid ?? o.uid, preserveOwner: false } : {}),
    filter: (entryPath, entry) => {
      if (refused) return false;
      try {
        if (entryPath !== '.' && entryPath !== './') safeRelativePath(entryPath);
      } catch (err) {
        refused = err as ArchiveError;
        return false;
      }
      const size = 'size' in entry ? entry.size : 0;
      files += 1;
      bytes += size;
      if (files > o.maxFiles) refused = new ArchiveError('too_many_files', `the archive holds more than ${o.maxFiles} entries`);
      else if (bytes > o.maxBytes) refused = new ArchiveError('too_large', `the archive unpacks to more than ${o.maxBytes} bytes`);
      return !refused;
    },
  });
  try {
    await pipeline(Readable.from([archive]), extract);
  } catch (err) {
    throw refused ?? new ArchiveError('not_an_archive', `not a readable gzipped tar: ${(err as Error).message}`);
  }
  if (refused) throw refused;
  return { bytes, files };
}

/**
 * The regular files of a gzipped tar under `folder` (relative paths below it), read into memory
 * within bounds; links and other special entries are left out.
 */
export async function readArchiveFiles(archive: Buffer, folder: string, bounds: ArchiveBounds): Promise<Map<string, Buffer>> {
  const base = folder === '' || folder === '.' ? '' : `${safeRelativePath(folder)}/`;
  const files = new Map<string, Buffer>();
  let bytes = 0;
  let refused: ArchiveError | undefined;
  const parse = new tar.Parser({
    strict: true,
    onReadEntry: (entry) => {
      const name = entry.path.replace(/^\.\//, '');
      if (refused || entry.type !== 'File' || !name.startsWith(base)) return entry.resume();
      if (files.size >= bounds.maxFiles) refused = new ArchiveError('too_many_files', `more than ${bounds.maxFiles} files`);
      bytes += entry.size;
      if (bytes > bounds.maxBytes) refused = new ArchiveError('too_large', `more than ${bounds.maxBytes} bytes`);
      if (refused) return entry.resume();
      const chunks: Buffer[] = [];
      entry.on('data', (c: Buffer) => chunks.push(c));
      entry.on('end', () => files.set(name.slice(base.length), Buffer.concat(chunks)));
    },
  });
  try {
    await pipeline(Readable.from([archive]), parse);
  } catch (err) {
    throw refused ?? new ArchiveError('not_an_archive', `not a readable gzipped tar: ${(err as Error).message}`);
  }
  if (refused) throw refused;
  return files;
}
