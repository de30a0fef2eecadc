import { createHash } from 'node:crypto';
import { constants, type Dirent } from 'node:fs';
import { chown, lstat, mkdir, open, readdir, rm, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import RE2 from 're2';
import { SANDBOX_LIMITS, type TransferredFile } from '@conveyor/contracts';

/** Why a file operation was refused or failed, by code (the reply's failure code). */
export class WorkspaceFsError extends Error {
  constructor(readonly code: 'refused' | 'not_found' | 'invalid' | 'limit', message: string) {
    super(message);
    this.name = 'WorkspaceFsError';
  }
}

export const WORKSPACE_MOUNT = '/workspace';
export const SKILLS_MOUNT = '/skills';

/** Folders grep and glob pass over (LangBot's `_SKIP_DIRS`): noise, and often large. */
const SKIP_DIRS = new Set(['.git', 'node_modules', '__pycache__', '.venv', 'venv', '.tox', 'dist', 'build']);

interface Location {
  /** The host folder the sandbox path lives in (the workspace, or a mounted skill's copy). */
  root: string;
  parts: string[];
  writable: boolean;
  /** The path as the sandbox sees it. */
  shown: string;
}

export interface WorkspaceSize {
  bytes: number;
  files: number;
  /** Changes whenever a file is added, removed, resized, touched or has its mode changed. */
  fingerprint: string;
  /** The walk stopped at SANDBOX_LIMITS.walkEntries. */
  truncated: boolean;
}

/**
 * The file tools (`read`, `write`, `edit`, `glob`, `grep`) and the transfers (`put`, `take`) on a
 * workspace's host folder, as the sandbox's paths name them: `/workspace/...` (relative paths are
 * taken from there) and, read-only, `/skills/<name>/...` of the skills the call mounts. A path outside
 * them, or through a symbolic link (which a command in the sandbox may have made to point anywhere on
 * the host), is refused: every part of the path is checked with lstat and files are opened with
 * O_NOFOLLOW. Calls of one workspace run one at a time (its lease), so no sandboxed process changes
 * the folder between the check and the use.
 */
export class WorkspaceFs {
  constructor(
    private readonly workspaceDir: string,
    private readonly skillDirs: ReadonlyMap<string, string>,
    /** Owner given to what the tools create, so the sandbox's user can change it (the service may run as root). */
    private readonly owner?: { uid: number; gid: number },
  ) {}

  async read(p: string, offset: number, limit: number): Promise<string> {
    const loc = this.locate(p, false);
    const data = await this.readFile(loc);
    if (data.includes(0)) return `[${loc.shown} is a binary file of ${data.byteLength} bytes; read it with exec (e.g. xxd or base64)]`;
    const lines = data.toString('utf8').split('\n');
    if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
    const from = Math.min(offset - 1, lines.length);
    const shown = lines.slice(from, from + limit);
    const text = shown.join('\n');
    const end = from + shown.length;
    return end < lines.length || from > 0 ? `${text}\n[lines ${from + 1}-${end} of ${lines.length}; read again with offset ${end + 1} for more]` : text;
  }

  async write(p: string, content: string, mode: 'overwrite' | 'append'): Promise<string> {
    const loc = this.locate(p, true);
    const bytes = Buffer.from(content, 'utf8');
    await this.writeFile(loc, bytes, mode === 'append');
    return `${mode === 'append' ? 'appended' : 'wrote'} ${bytes.byteLength} bytes to ${loc.shown}`;
  }

  async edit(p: string, oldString: string, newString: string): Promise<string> {
    const loc = this.locate(p, true);
    const text = (await this.readFile(loc)).toString('utf8');
    const first = text.indexOf(oldString);
    if (first < 0) throw new WorkspaceFsError('invalid', `old_string was not found in ${loc.shown}`);
    if (text.indexOf(oldString, first + 1) >= 0) throw new WorkspaceFsError('invalid', `old_string occurs more than once in ${loc.shown}; include more of the text around it`);
    await this.writeFile(loc, Buffer.from(text.slice(0, first) + newString + text.slice(first + oldString.length), 'utf8'), false);
    return `edited ${loc.shown}`;
  }

  async glob(pattern: string, under: string): Promise<string> {
    const loc = this.locate(under, false);
    const base = await this.realDir(loc);
    const relative = pattern.startsWith(`${loc.shown}/`) ? pattern.slice(loc.shown.length + 1) : pattern.replace(/^\.\//, '');
    const matches: string[] = [];
    let more = false;
    await walk(base, (rel, entry) => {
      if (!entry.isFile() && !entry.isDirectory()) return true;
      if (path.posix.matchesGlob(rel, relative)) {
        if (matches.length >= SANDBOX_LIMITS.globMatches) {
          more = true;
          return false;
        }
        matches.push(`${loc.shown}/${rel}`);
      }
      return true;
    });
    if (matches.length === 0) return `no paths under ${loc.shown} match ${pattern}`;
    return matches.sort().join('\n') + (more ? `\n[more than ${SANDBOX_LIMITS.globMatches} matches; narrow the pattern]` : '');
  }

  async grep(pattern: string, under: string, include: string | undefined): Promise<string> {
    let re: RE2;
    try {
      re = new RE2(pattern, 'u');
    } catch (err) {
      throw new WorkspaceFsError('invalid', `pattern is not a valid regular expression (RE2 syntax): ${(err as Error).message}`);
    }
    const loc = this.locate(under, false);
    const base = await this.realDir(loc);
    const out: string[] = [];
    let filesRead = 0;
    let stopped = '';
    await walk(base, (rel, entry) => {
      if (entry.isDirectory()) return SKIP_DIRS.has(entry.name) ? 'skip' : true;
      if (!entry.isFile()) return true;
      if (include && !path.posix.matchesGlob(entry.name, include) && !path.posix.matchesGlob(rel, include)) return true;
      filesRead += 1;
      if (filesRead > SANDBOX_LIMITS.grepFiles) {
        stopped = `[stopped after ${SANDBOX_LIMITS.grepFiles} files; narrow path or include]`;
        return false;
      }
      return { read: path.join(base, rel), rel };
    }, async (file, rel) => {
      const data = await readNoFollow(file, SANDBOX_LIMITS.readFileBytes).catch(() => undefined);
      if (!data || data.includes(0)) return true;
      const lines = data.toString('utf8').split('\n');
      for (let i = 0; i < lines.length; i++) {
        if (!re.test(lines[i]!)) continue;
        if (out.length >= SANDBOX_LIMITS.grepMatches) {
          stopped = `[more than ${SANDBOX_LIMITS.grepMatches} matches; narrow the pattern]`;
          return false;
        }
        out.push(`${loc.shown}/${rel}:${i + 1}: ${lines[i]!.slice(0, SANDBOX_LIMITS.grepLineChars)}`);
      }
      return true;
    });
    if (out.length === 0) return stopped || `no line under ${loc.shown} matches ${pattern}`;
    return out.join('\n') + (stopped ? `\n${stopped}` : '');
  }

  /** Creates a folder (and its parents) under /workspace, as the sandbox's user. */
  async makeFolder(p: string): Promise<void> {
    await this.checkedPath(this.locate(p, true), 'all');
  }

  /** Writes files from the chat into the workspace. */
  async put(files: readonly { path: string; base64: string }[]): Promise<string> {
    let total = 0;
    const decoded = files.map((f) => {
      const data = Buffer.from(f.base64, 'base64');
      total += data.byteLength;
      return { loc: this.locate(f.path, true), data };
    });
    if (total > SANDBOX_LIMITS.transferBytes) throw new WorkspaceFsError('limit', `files put at once are at most ${SANDBOX_LIMITS.transferBytes} bytes together`);
    for (const f of decoded) await this.writeFile(f.loc, f.data, false);
    return decoded.map((f) => `${f.loc.shown} (${f.data.byteLength} bytes)`).join('\n');
  }

  /**
   * Reads and removes the regular files under a folder (the agent's outbox), up to the transfer
   * bounds; what is left over stays, and is named in `left`.
   */
  async take(under: string): Promise<{ files: TransferredFile[]; left: string[] }> {
    const loc = this.locate(under, true);
    let base: string;
    try {
      base = await this.realDir(loc);
    } catch (err) {
      if (err instanceof WorkspaceFsError && err.code === 'not_found') return { files: [], left: [] };
      throw err;
    }
    const files: TransferredFile[] = [];
    const left: string[] = [];
    let total = 0;
    await walk(base, (rel, entry) => (entry.isFile() ? { read: path.join(base, rel), rel } : entry.isDirectory()), async (file, rel) => {
      const data = await readNoFollow(file, SANDBOX_LIMITS.transferBytes).catch(() => undefined);
      if (!data || files.length >= SANDBOX_LIMITS.transferFiles || total + data.byteLength > SANDBOX_LIMITS.transferBytes) {
        left.push(`${loc.shown}/${rel}`);
        return true;
      }
      total += data.byteLength;
      files.push({ path: rel, bytes: data.byteLength, base64: data.toString('base64') });
      await rm(file, { force: true });
      return true;
    });
    // An outbox emptied whole goes too; one with files left over stays for them.
    if (left.length === 0) await rm(base, { recursive: true, force: true });
    return { files, left };
  }

  private locate(raw: string, write: boolean): Location {
    const normal = path.posix.normalize(raw.startsWith('/') ? raw : `${WORKSPACE_MOUNT}/${raw}`).replace(/\/+$/, '') || '/';
    if (normal.includes('\0')) throw new WorkspaceFsError('refused', 'a path may not hold a NUL character');
    if (normal === WORKSPACE_MOUNT || normal.startsWith(`${WORKSPACE_MOUNT}/`)) {
      const parts = normal.slice(WORKSPACE_MOUNT.length).split('/').filter(Boolean);
      return { root: this.workspaceDir, parts, writable: true, shown: normal };
    }
    if (normal.startsWith(`${SKILLS_MOUNT}/`)) {
      const [name, ...parts] = normal.slice(SKILLS_MOUNT.length + 1).split('/');
      const dir = this.skillDirs.get(name ?? '');
      if (dir === undefined) throw new WorkspaceFsError('refused', `${normal}: skill ${JSON.stringify(name)} is not activated in this run`);
      if (write) throw new WorkspaceFsError('refused', `${normal}: skills are read-only; copy the file into /workspace to change it`);
      return { root: dir, parts, writable: false, shown: normal };
    }
    throw new WorkspaceFsError('refused', `${raw}: path escapes the workspace boundary (use paths under /workspace)`);
  }

  /**
   * Every existing part of the path, checked to be no symbolic link; creates the missing folders on
   * the way when asked (`parents`), or every missing part as a folder (`all`).
   */
  private async checkedPath(loc: Location, create: false | 'parents' | 'all'): Promise<string> {
    let current = loc.root;
    for (let i = 0; i < loc.parts.length; i++) {
      current = path.join(current, loc.parts[i]!);
      const last = i === loc.parts.length - 1;
      const stat = await lstat(current).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return undefined;
        throw err;
      });
      if (stat?.isSymbolicLink()) throw new WorkspaceFsError('refused', `${loc.shown}: path goes through a symbolic link; the file tools do not follow links`);
      if (!stat && (!last || create === 'all')) {
        if (!create) throw new WorkspaceFsError('not_found', `${loc.shown}: no such file or folder`);
        await mkdir(current);
        if (this.owner) await chown(current, this.owner.uid, this.owner.gid);
      } else if (stat && !last && !stat.isDirectory()) {
        throw new WorkspaceFsError('invalid', `${loc.shown}: ${loc.parts.slice(0, i + 1).join('/')} is not a folder`);
      }
    }
    return current;
  }

  private async realDir(loc: Location): Promise<string> {
    const dir = await this.checkedPath(loc, false);
    const stat = await lstat(dir).catch(() => undefined);
    if (!stat) throw new WorkspaceFsError('not_found', `${loc.shown}: no such folder`);
    if (!stat.isDirectory()) throw new WorkspaceFsError('invalid', `${loc.shown} is not a folder`);
    return dir;
  }

  private async readFile(loc: Location): Promise<Buffer> {
    const file = await this.checkedPath(loc, false);
    return readNoFollow(file, SANDBOX_LIMITS.readFileBytes, loc.shown);
  }

  private async writeFile(loc: Location, data: Buffer, append: boolean): Promise<void> {
    if (!loc.writable) throw new WorkspaceFsError('refused', `${loc.shown} is read-only`);
    if (loc.parts.length === 0) throw new WorkspaceFsError('invalid', `${loc.shown} is a folder`);
    const file = await this.checkedPath(loc, 'parents');
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW | (append ? constants.O_APPEND : constants.O_TRUNC);
    let handle: FileHandle;
    try {
      handle = await open(file, flags, 0o666);
    } catch (err) {
      throw fsError(err, loc.shown);
    }
    try {
      const stat = await handle.stat();
      if (!stat.isFile()) throw new WorkspaceFsError('invalid', `${loc.shown} is not a regular file`);
      await handle.writeFile(data);
      if (this.owner) await handle.chown(this.owner.uid, this.owner.gid);
    } finally {
      await handle.close();
    }
  }
}

function fsError(err: unknown, shown: string): Error {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return new WorkspaceFsError('not_found', `${shown}: no such file`);
  if (code === 'ELOOP') return new WorkspaceFsError('refused', `${shown} is a symbolic link; the file tools do not follow links`);
  if (code === 'EISDIR') return new WorkspaceFsError('invalid', `${shown} is a folder`);
  if (code === 'EACCES' || code === 'EPERM') return new WorkspaceFsError('refused', `${shown}: permission denied`);
  return err as Error;
}

/** A file's bytes, opened without following a link, refused past `max` bytes. */
async function readNoFollow(file: string, max: number, shown = file): Promise<Buffer> {
  let handle: FileHandle;
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    throw fsError(err, shown);
  }
  try {
    const stat = await handle.stat();
    if (stat.isDirectory()) throw new WorkspaceFsError('invalid', `${shown} is a folder; list it with glob`);
    if (!stat.isFile()) throw new WorkspaceFsError('invalid', `${shown} is not a regular file`);
    if (stat.size > max) throw new WorkspaceFsError('limit', `${shown} is ${stat.size} bytes; the file tools open at most ${max} (use exec with head, tail or sed)`);
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

type Visit = boolean | 'skip' | { read: string; rel: string };

/**
 * Walks a folder breadth-first without following links, at most SANDBOX_LIMITS.walkEntries entries.
 * `visit` returns false to stop, true to go on (into a folder), `skip` to pass a folder over, or a
 * file to hand to `onFile`.
 */
async function walk(base: string, visit: (rel: string, entry: Dirent) => Visit, onFile?: (file: string, rel: string) => Promise<boolean>): Promise<void> {
  const queue = [''];
  let seen = 0;
  while (queue.length > 0) {
    const dir = queue.shift()!;
    let entries: Dirent[];
    try {
      entries = await readdir(path.join(base, dir), { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of entries) {
      if (++seen > SANDBOX_LIMITS.walkEntries) return;
      const rel = dir === '' ? entry.name : `${dir}/${entry.name}`;
      const next = visit(rel, entry);
      if (next === false) return;
      if (typeof next === 'object') {
        if (onFile && !(await onFile(next.read, next.rel))) return;
      } else if (next === true && entry.isDirectory()) {
        queue.push(rel);
      }
    }
  }
}

/** Size and change fingerprint of a workspace folder (links counted as entries, never followed). */
export async function measureWorkspace(dir: string): Promise<WorkspaceSize> {
  const hash = createHash('sha1');
  let bytes = 0;
  let files = 0;
  let truncated = false;
  const queue = [''];
  let seen = 0;
  while (queue.length > 0 && !truncated) {
    const rel = queue.shift()!;
    let entries: Dirent[];
    try {
      entries = await readdir(path.join(dir, rel), { withFileTypes: true });
    } catch {
      continue;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : 1));
    for (const entry of entries) {
      if (++seen > SANDBOX_LIMITS.walkEntries) {
        truncated = true;
        break;
      }
      const child = rel === '' ? entry.name : `${rel}/${entry.name}`;
      const stat = await lstat(path.join(dir, child)).catch(() => undefined);
      if (!stat) continue;
      files += 1;
      if (stat.isFile()) bytes += stat.size;
      hash.update(`${child}\0${stat.mode}\0${stat.size}\0${stat.mtimeMs}\n`);
      if (stat.isDirectory()) queue.push(child);
    }
  }
  return { bytes, files, fingerprint: hash.digest('hex'), truncated };
}
