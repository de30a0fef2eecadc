// A skill from a folder on disk (what conveyor.yaml names), read within the bounds an uploaded zip has.
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { SKILL_LIMITS, SkillFormatError, skillFromFiles, type SkillPackage } from './skills.js';

/** Directories and files a walk of one skill folder visits before it stops: a folder of empty folders is bounded too. */
const MAX_ENTRIES = SKILL_LIMITS.files * 4;

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
  return skillFromFiles(files, path.basename(path.resolve(dir)));
}
