// Agent Skills packages and the archives workspaces and skills are kept as.
export { ArchiveError, packDirectory, packFiles, readArchiveFiles, safeRelativePath, unpackArchive, type ArchiveBounds } from './archive.js';
export { SKILL_LIMITS, SkillFormatError, parseSkillMd, readSkillZip, skillFromFiles, type SkillManifest, type SkillPackage } from './skills.js';
export { readSkillFolder } from './folder.js';
