// The Agent Skills conveyor.yaml installs: each entry a folder holding a SKILL.md (its path relative
// to the file), read within the bounds an uploaded skill has, then applied with the rest of the file.
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { storableText } from '@conveyor/contracts';
import { ArchiveError, readArchiveFiles, SKILL_LIMITS, SkillFormatError, skillFromFiles, type SkillPackage } from '@conveyor/sandbox/skills';
import { ConfigFileError, type ConfigIssue } from './errors.js';
import type { ConveyorConfig } from './types.js';

/** Directories and files a walk of one skill folder visits before it stops: a folder of empty folders is bounded too. */
const MAX_ENTRIES = SKILL_LIMITS.files * 4;
const SKILL_BOUNDS = { maxBytes: SKILL_LIMITS.bytes, maxFiles: SKILL_LIMITS.files };

/**
 * A skill from a folder on disk: its regular files (relative paths), within the skill's bounds of
 * files and bytes, read into a package as an uploaded zip would be. A link, or any file that is not
 * a regular file, is refused: the folder is installed as it is or not at all.
 */
export async function readSkillFolder(dir: string): Promise<SkillPackage> {
  const top = await stat(dir).catch((err: NodeJS.ErrnoException) => {
    throw new Error(`cannot read the folder: ${err.code === 'ENOENT' ? 'it does not exist' : err.message}`);
  });
  if (!top.isDirectory()) throw new Error('is not a folder (a skill is a folder holding a SKILL.md)');
  const files = new Map<string, Buffer>();
  let bytes = 0;
  let entries = 0;
  const pending = [''];
  for (let rel = pending.pop(); rel !== undefined; rel = pending.pop()) {
    const listed = await readdir(path.join(dir, rel), { withFileTypes: true });
    listed.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of listed) {
      const name = rel ? `${rel}/${entry.name}` : entry.name;
      if (++entries > MAX_ENTRIES) throw new SkillFormatError('too_many_files', `the folder holds more than ${MAX_ENTRIES} entries`);
      if (entry.isSymbolicLink()) throw new SkillFormatError('link', `${JSON.stringify(name)} is a link; a skill holds plain files only`);
      if (entry.isDirectory()) {
        pending.push(name);
        continue;
      }
      if (!entry.isFile()) throw new SkillFormatError('link', `${JSON.stringify(name)} is not a regular file; a skill holds plain files only`);
      if (files.size >= SKILL_LIMITS.files) throw new SkillFormatError('too_many_files', `a skill holds at most ${SKILL_LIMITS.files} files`);
      const size = (await stat(path.join(dir, name))).size;
      bytes += size;
      if (bytes > SKILL_LIMITS.bytes) throw new SkillFormatError('too_large', `a skill holds at most ${SKILL_LIMITS.bytes} bytes`);
      files.set(name, await readFile(path.join(dir, name)));
    }
  }
  const skill = await skillFromFiles(files, path.basename(path.resolve(dir)));
  // Postgres stores no NUL and no lone surrogate.
  if (storableText(skill.description) !== skill.description || storableText(skill.instructions) !== skill.instructions) throw new Error('SKILL.md holds a NUL character or a lone surrogate');
  return skill;
}

/**
 * Reads every skill folder `config` lists. Every folder is read before any skill is stored: one that
 * is missing, holds no valid SKILL.md, passes a bound or names the same skill as another entry stops
 * the apply, naming the entry and the reason.
 */
export async function readConfigSkills(config: Pick<ConveyorConfig, 'file' | 'skills'>): Promise<SkillPackage[]> {
  const issues: ConfigIssue[] = [];
  const packages: SkillPackage[] = [];
  const named = new Map<string, number>();
  for (const [i, entry] of config.skills.entries()) {
    const where = `skills[${i}].path`;
    try {
      const skill = await readSkillFolder(entry.path);
      const first = named.get(skill.name);
      if (first !== undefined) {
        issues.push({ path: where, message: `${entry.path}: skill ${JSON.stringify(skill.name)} is also skills[${first}]; a skill is installed from one folder` });
        continue;
      }
      named.set(skill.name, i);
      packages.push(skill);
    } catch (err) {
      const reason = err instanceof SkillFormatError || err instanceof ArchiveError || err instanceof Error ? err.message : String(err);
      issues.push({ path: where, message: `${entry.path}: ${reason}` });
    }
  }
  if (issues.length) throw new ConfigFileError(config.file, issues);
  return packages;
}

/** Whether two skill archives hold the same files (a tar's own bytes differ with every packing). */
export async function sameSkillFiles(a: Uint8Array, b: Uint8Array): Promise<boolean> {
  try {
    const [left, right] = await Promise.all([readArchiveFiles(Buffer.from(a.buffer, a.byteOffset, a.byteLength), '', SKILL_BOUNDS), readArchiveFiles(Buffer.from(b.buffer, b.byteOffset, b.byteLength), '', SKILL_BOUNDS)]);
    return left.size === right.size && [...left].every(([name, data]) => right.get(name)?.equals(data) === true);
  } catch {
    // An archive that cannot be read is replaced.
    return false;
  }
}
