import JSZip from 'jszip';
import { parse as parseYaml } from 'yaml';
import { SkillName, storableText } from '@conveyor/contracts';
import { ArchiveError, packFiles, safeRelativePath, type ArchiveBounds } from './archive.js';

/** Bounds of one skill: what an upload may hold, and what is unpacked for each sandbox that mounts it. */
export const SKILL_LIMITS = {
  /** Bytes of an uploaded zip as sent. */
  uploadBytes: 8 * 1024 * 1024,
  /** Bytes of all its files, unpacked. */
  bytes: 16 * 1024 * 1024,
  files: 512,
  /** Characters of the front matter's description (the open format's bound). */
  descriptionChars: 1024,
  /** Characters of SKILL.md as a whole. */
  skillMdChars: 256 * 1024,
} as const;

const SKILL_BOUNDS: ArchiveBounds = { maxBytes: SKILL_LIMITS.bytes, maxFiles: SKILL_LIMITS.files };

export class SkillFormatError extends Error {
  constructor(readonly code: 'no_skill_md' | 'bad_front_matter' | 'bad_name' | 'bad_description' | 'bad_text' | 'not_a_zip' | ArchiveError['code'], message: string) {
    super(message);
    this.name = 'SkillFormatError';
  }
}

export interface SkillManifest {
  name: string;
  description: string;
  /** SKILL.md after its front matter. */
  instructions: string;
}

/** A skill ready to install: its manifest and its folder as a gzipped tar. */
export interface SkillPackage extends SkillManifest {
  archive: Buffer;
  files: number;
  bytes: number;
}

const FRONT_MATTER = /^\uFEFF?---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/;

/**
 * Reads a SKILL.md: YAML front matter with `name` and `description` (the open Agent Skills format),
 * then the instructions. `name` may be left out when the folder's name is given and is a valid name.
 */
export function parseSkillMd(text: string, folderName?: string): SkillManifest {
  if (text.length > SKILL_LIMITS.skillMdChars) throw new SkillFormatError('too_large', `SKILL.md is longer than ${SKILL_LIMITS.skillMdChars} characters`);
  // Postgres stores no NUL and no lone surrogate: such a SKILL.md is refused, never stored altered.
  if (storableText(text) !== text) throw new SkillFormatError('bad_text', 'SKILL.md holds a NUL character or a lone surrogate');
  const match = FRONT_MATTER.exec(text);
  if (!match) throw new SkillFormatError('bad_front_matter', 'SKILL.md must start with YAML front matter between --- lines, naming the skill and describing it');
  let meta: unknown;
  try {
    meta = parseYaml(match[1]!, { maxAliasCount: 10 });
  } catch (err) {
    throw new SkillFormatError('bad_front_matter', `SKILL.md front matter is not YAML: ${(err as Error).message}`);
  }
  const fields = meta && typeof meta === 'object' && !Array.isArray(meta) ? (meta as Record<string, unknown>) : {};
  const rawName = typeof fields.name === 'string' ? fields.name : folderName;
  const name = SkillName.safeParse(rawName);
  if (!name.success) throw new SkillFormatError('bad_name', `SKILL.md name ${JSON.stringify(rawName ?? null)}: ${name.error.issues[0]?.message ?? 'invalid'}`);
  const description = typeof fields.description === 'string' ? fields.description.trim() : '';
  if (description === '' || description.length > SKILL_LIMITS.descriptionChars) {
    throw new SkillFormatError('bad_description', `SKILL.md needs a description of 1 to ${SKILL_LIMITS.descriptionChars} characters: the model chooses a skill by it`);
  }
  return { name: name.data, description, instructions: match[2]!.trim() };
}

/**
 * A skill from its files (relative path → bytes): SKILL.md at the top, or in the one folder every file
 * is in (a zip of the skill's folder), which is then taken as the top.
 */
export async function skillFromFiles(input: ReadonlyMap<string, Buffer>, folderName?: string): Promise<SkillPackage> {
  let files = new Map<string, Buffer>();
  for (const [name, data] of input) files.set(safeRelativePath(name), data);
  let folder = folderName;
  if (!files.has('SKILL.md')) {
    const tops = new Set([...files.keys()].map((f) => f.split('/')[0]!));
    const [top] = tops;
    if (tops.size !== 1 || top === undefined || !files.has(`${top}/SKILL.md`)) throw new SkillFormatError('no_skill_md', 'a skill needs a SKILL.md at its top (or in the one folder the zip holds)');
    files = new Map([...files].map(([f, d]) => [f.slice(top.length + 1), d]));
    folder = top;
  }
  if (files.size > SKILL_LIMITS.files) throw new SkillFormatError('too_many_files', `a skill holds at most ${SKILL_LIMITS.files} files`);
  const bytes = [...files.values()].reduce((n, d) => n + d.byteLength, 0);
  if (bytes > SKILL_LIMITS.bytes) throw new SkillFormatError('too_large', `a skill holds at most ${SKILL_LIMITS.bytes} bytes`);
  const manifest = parseSkillMd(files.get('SKILL.md')!.toString('utf8'), folder);
  return { ...manifest, archive: await packFiles(files), files: files.size, bytes };
}

/** Unix file type bits of a zip entry's external attributes: a link must not be unpacked as one. */
const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;

/**
 * The files of an uploaded zip, refusing what could harm the host that unpacks it: paths outside
 * the skill (`..`, absolute), links, more files or bytes than a skill may hold (counted as the entries
 * inflate, so a zip bomb stops at the bound, whatever its headers claim).
 */
export async function readSkillZip(zip: Buffer): Promise<Map<string, Buffer>> {
  if (zip.byteLength > SKILL_LIMITS.uploadBytes) throw new SkillFormatError('too_large', `a skill upload is at most ${SKILL_LIMITS.uploadBytes} bytes`);
  let archive: JSZip;
  try {
    archive = await JSZip.loadAsync(zip, { checkCRC32: true, createFolders: false });
  } catch (err) {
    throw new SkillFormatError('not_a_zip', `not a readable zip: ${(err as Error).message}`);
  }
  const entries = Object.values(archive.files).filter((e) => !e.dir);
  if (entries.length > SKILL_LIMITS.files) throw new SkillFormatError('too_many_files', `a skill holds at most ${SKILL_LIMITS.files} files`);
  const files = new Map<string, Buffer>();
  let budget: number = SKILL_BOUNDS.maxBytes;
  for (const entry of entries) {
    // JSZip rewrites `../x` to `x` on load; the name as written is checked, so a hostile archive is refused, not repaired.
    const name = wrap(() => safeRelativePath(entry.unsafeOriginalName ?? entry.name));
    if (typeof entry.unixPermissions === 'number' && (entry.unixPermissions & S_IFMT) === S_IFLNK) {
      throw new SkillFormatError('link', `${JSON.stringify(name)} is a link; a skill holds plain files only`);
    }
    const data = await inflateWithin(entry, budget);
    budget -= data.byteLength;
    files.set(name, data);
  }
  return files;
}

function wrap<T>(f: () => T): T {
  try {
    return f();
  } catch (err) {
    if (err instanceof ArchiveError) throw new SkillFormatError(err.code, err.message);
    throw err;
  }
}

/** Inflates one entry, stopping as soon as it passes `budget` bytes. */
function inflateWithin(entry: JSZip.JSZipObject, budget: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stream = entry.nodeStream('nodebuffer');
    stream.on('data', (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > budget) {
        stream.pause();
        stream.removeAllListeners('data');
        reject(new SkillFormatError('too_large', `the skill unpacks to more than ${SKILL_BOUNDS.maxBytes} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    stream.on('error', (err: Error) => reject(new SkillFormatError('not_a_zip', `${entry.name}: ${err.message}`)));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
  });
}
