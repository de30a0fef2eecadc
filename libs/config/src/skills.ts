// The Agent Skills conveyor.yaml installs: each entry a folder holding a SKILL.md (its path relative
// to the file), read within the bounds an uploaded skill has, then applied with the rest of the file.
import { readArchiveFiles, readSkillFolder, SKILL_LIMITS, type SkillPackage } from '@conveyor/sandbox/skills';
import { ConfigFileError, type ConfigIssue } from './errors.js';
import type { ConveyorConfig } from './types.js';

const SKILL_BOUNDS = { maxBytes: SKILL_LIMITS.bytes, maxFiles: SKILL_LIMITS.files };

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
      const reason = err instanceof Error ? err.message : String(err);
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
