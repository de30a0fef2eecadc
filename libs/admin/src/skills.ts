// Agent Skills and sandbox workspaces through the admin API: the installed skills (listed, read with
// their files, uploaded as a zip, saved from a folder the agent wrote in its workspace, deleted) and
// the workspaces the sandbox keeps (listed, deleted). An uploaded zip is read within the skill bounds
// before anything is stored, so a refused one (a path out of the skill, a link, a zip bomb, no
// SKILL.md) leaves nothing behind. Every write is audited (names and sources, never file contents)
// and every skill write announced as a `skill` change, so runners drop their cached skill list.
import type { AdminApi } from '@conveyor/contracts';
import type { PrismaClient, SandboxWorkspaceStore, SkillStore } from '@conveyor/persistence';
import { ArchiveError, readArchiveFiles, readSkillZip, safeRelativePath, SKILL_LIMITS, SkillFormatError, skillFromFiles, type ArchiveBounds, type SkillPackage } from '@conveyor/sandbox/skills';
import { recordAudit } from './audit.js';
import type { Principal } from './auth.js';
import type { ConfigChangeSink, Paged } from './config-store.js';
import { AdminApiError } from './errors.js';

/** `managedBy` of skills installed through the API: a file apply never deletes them. */
const CONSOLE_MANAGED = 'console';
const SKILL_BOUNDS: ArchiveBounds = { maxBytes: SKILL_LIMITS.bytes, maxFiles: SKILL_LIMITS.files };
/** Where the sandbox mounts a workspace; the paths the agent sees start here. */
const WORKSPACE_ROOT = '/workspace';

const SKILL_FIELDS = { name: true, description: true, files: true, bytes: true, revision: true, managedBy: true, createdAt: true, updatedAt: true } as const;
const WORKSPACE_FIELDS = { id: true, revision: true, bytes: true, files: true, createdAt: true, updatedAt: true, lastUsedAt: true } as const;

type SkillRow = { name: string; description: string; files: number; bytes: number; revision: number; managedBy: string; createdAt: Date; updatedAt: Date };
type WorkspaceRow = { id: string; revision: number; bytes: number; files: number; createdAt: Date; updatedAt: Date; lastUsedAt: Date };

/** Where an installed skill came from, for its audit entry. */
type Source = { kind: 'upload' } | { kind: 'workspace'; workspace: string; folder: string };

export class Skills {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly skills: SkillStore,
    private readonly workspaces: SandboxWorkspaceStore,
    private readonly sink: ConfigChangeSink,
  ) {}

  // ---------------------------------------------------------------- skills

  async list(page: AdminApi.PageQuery): Promise<Paged<AdminApi.Skill>> {
    const rows = await this.prisma.skill.findMany({ select: SKILL_FIELDS, orderBy: { name: 'asc' }, take: page.limit + 1, ...(page.cursor ? { where: { name: { gt: page.cursor } } } : {}) });
    const more = rows.length > page.limit;
    const shown = more ? rows.slice(0, page.limit) : rows;
    return { items: shown.map(skillDto), nextCursor: more ? shown[shown.length - 1].name : null };
  }

  /** The skill with its files' paths and sizes and its SKILL.md, read from the stored archive. */
  async get(name: string): Promise<AdminApi.SkillDetail> {
    // One read, so the files and the row are of the same revision.
    const row = await this.prisma.skill.findUnique({ where: { name }, select: { ...SKILL_FIELDS, instructions: true, archive: true } });
    if (!row) throw notFound(name);
    const files = await readArchiveFiles(Buffer.from(row.archive.buffer, row.archive.byteOffset, row.archive.byteLength), '', SKILL_BOUNDS);
    const fileList = [...files].map(([path, data]) => ({ path, bytes: data.byteLength })).sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    return { ...skillDto(row), instructions: row.instructions, skillMd: files.get('SKILL.md')?.toString('utf8') ?? '', fileList };
  }

  /** Installs the skill a zip holds (its folder, or the folder's contents), replacing one of the same name. */
  async upload(actor: Principal, zip: Buffer): Promise<AdminApi.SkillInstalled> {
    const skill = await refusedAs('body', async () => skillFromFiles(await readSkillZip(zip)));
    return this.install(actor, skill, { kind: 'upload' });
  }

  /**
   * Installs a folder of a sandbox workspace as a skill: what the agent wrote there (a SKILL.md and
   * its scripts), read from the workspace as stored (the last call's revision). Links and other
   * special files in the folder are left out.
   */
  async fromWorkspace(actor: Principal, input: AdminApi.SkillFromWorkspaceInput): Promise<AdminApi.SkillInstalled> {
    const folder = workspaceFolder(input.path);
    const stored = await this.workspaces.load(input.workspace);
    if (!stored) throw new AdminApiError('not_found', `body.workspace: workspace ${JSON.stringify(input.workspace)} does not exist`, { field: 'body.workspace' });
    const files = await refusedAs('body.path', () => readArchiveFiles(stored.archive, folder, SKILL_BOUNDS));
    if (files.size === 0) throw new AdminApiError('not_found', `body.path: workspace ${JSON.stringify(input.workspace)} has no files under ${WORKSPACE_ROOT}/${folder}`, { field: 'body.path' });
    const skill = await refusedAs('body.path', () => skillFromFiles(files, folder.split('/').at(-1)));
    return this.install(actor, skill, { kind: 'workspace', workspace: input.workspace, folder });
  }

  async remove(actor: Principal, name: string): Promise<void> {
    await this.prisma.$transaction(async (tx) => {
      const row = await tx.skill.findUnique({ where: { name }, select: { revision: true } });
      const { count } = await tx.skill.deleteMany({ where: { name } });
      if (!row || count === 0) throw notFound(name);
      await recordAudit(tx, { actor: actor.actor, resource: 'skill', resourceId: name, action: 'delete', versionBefore: row.revision });
    });
    await this.announce(name, 0);
  }

  private async install(actor: Principal, skill: SkillPackage, source: Source): Promise<AdminApi.SkillInstalled> {
    const { revision, created } = await this.skills.install({ ...skill, managedBy: CONSOLE_MANAGED });
    const changes = source.kind === 'upload' ? ['source:upload'] : ['source:workspace', `workspace:${source.workspace}`, `path:${WORKSPACE_ROOT}/${source.folder}`];
    await this.prisma.$transaction((tx) =>
      recordAudit(tx, { actor: actor.actor, resource: 'skill', resourceId: skill.name, action: created ? 'create' : 'replace', versionBefore: created ? null : revision - 1, versionAfter: revision, changes }),
    );
    await this.announce(skill.name, revision);
    const row = await this.prisma.skill.findUnique({ where: { name: skill.name }, select: SKILL_FIELDS });
    // Deleted again between the install and this read: the install's own facts still stand.
    const now = new Date();
    return {
      outcome: created ? 'created' : 'replaced',
      skill: skillDto(row ?? { name: skill.name, description: skill.description, files: skill.files, bytes: skill.bytes, revision, managedBy: CONSOLE_MANAGED, createdAt: now, updatedAt: now }),
    };
  }

  private announce(name: string, revision: number): Promise<void> {
    return this.sink.changed({ version: 1, kind: 'skill', id: name, revision });
  }

  // ---------------------------------------------------------------- sandbox workspaces

  async listWorkspaces(page: AdminApi.PageQuery): Promise<Paged<AdminApi.SandboxWorkspace>> {
    const rows = await this.prisma.sandboxWorkspace.findMany({ select: WORKSPACE_FIELDS, orderBy: { id: 'asc' }, take: page.limit + 1, ...(page.cursor ? { where: { id: { gt: page.cursor } } } : {}) });
    const more = rows.length > page.limit;
    const shown = more ? rows.slice(0, page.limit) : rows;
    return { items: shown.map(workspaceDto), nextCursor: more ? shown[shown.length - 1].id : null };
  }

  /**
   * Deletes a workspace's stored files. A sandbox replica's copy is dropped at its next call (the
   * stored revision is gone); a call running meanwhile keeps none of its changes.
   */
  async removeWorkspace(actor: Principal, id: string): Promise<void> {
    await this.prisma.$transaction(async (tx) => {
      const row = await tx.sandboxWorkspace.findUnique({ where: { id }, select: { revision: true } });
      const { count } = await tx.sandboxWorkspace.deleteMany({ where: { id } });
      if (!row || count === 0) throw new AdminApiError('not_found', `sandbox workspace ${JSON.stringify(id)} does not exist`, { field: 'path.id' });
      await recordAudit(tx, { actor: actor.actor, resource: 'sandbox-workspace', resourceId: id, action: 'delete', versionBefore: row.revision });
    });
  }
}

/**
 * A folder of a workspace as the archive names it (relative to the workspace): `/workspace/x`,
 * `/workspace/x/` and `x` are all `x`. Anything outside the workspace, or the workspace itself, is
 * refused.
 */
export function workspaceFolder(raw: string): string {
  const trimmed = raw.trim().replace(/\/+$/, '');
  const relative = trimmed === WORKSPACE_ROOT ? '' : trimmed.startsWith(`${WORKSPACE_ROOT}/`) ? trimmed.slice(WORKSPACE_ROOT.length + 1) : trimmed;
  if (relative === '' || relative.startsWith('/')) {
    throw AdminApiError.invalid('body.path', `name the skill's folder under ${WORKSPACE_ROOT} (${WORKSPACE_ROOT}/my-skill, or my-skill)`);
  }
  try {
    return safeRelativePath(relative);
  } catch (err) {
    if (err instanceof ArchiveError) throw refusal('body.path', err);
    throw err;
  }
}

function notFound(name: string): AdminApiError {
  return new AdminApiError('not_found', `skill ${JSON.stringify(name)} does not exist`, { field: 'path.name' });
}

/** A refused archive or skill as the API's 400, its reason kept. */
function refusal(field: string, err: SkillFormatError | ArchiveError): AdminApiError {
  return new AdminApiError('validation_failed', `${field}: ${err.message}`, { field, issues: [{ path: field, message: err.message }], reason: err.code });
}

async function refusedAs<T>(field: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    if (err instanceof SkillFormatError || err instanceof ArchiveError) throw refusal(field, err);
    throw err;
  }
}

function skillDto(row: SkillRow): AdminApi.Skill {
  return {
    name: row.name,
    description: row.description,
    files: row.files,
    bytes: row.bytes,
    revision: row.revision,
    managedBy: row.managedBy,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

function workspaceDto(row: WorkspaceRow): AdminApi.SandboxWorkspace {
  return {
    id: row.id,
    bytes: row.bytes,
    files: row.files,
    revision: row.revision,
    lastUsedAt: row.lastUsedAt.toISOString(),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}
