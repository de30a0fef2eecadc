import type pg from 'pg';
import type { Database } from './client.js';

/** A workspace's stored state, without its archive. */
export interface WorkspaceSummary {
  id: string;
  revision: number;
  bytes: number;
  files: number;
  createdAt: Date;
  updatedAt: Date;
  lastUsedAt: Date;
}

export interface WorkspaceArchive {
  revision: number;
  archive: Buffer;
}

/** An installed skill, without its archive. */
export interface SkillSummary {
  name: string;
  description: string;
  files: number;
  bytes: number;
  revision: number;
  managedBy: string;
  createdAt: Date;
  updatedAt: Date;
}

export interface SkillRecord extends SkillSummary {
  instructions: string;
}

export interface SkillToInstall {
  name: string;
  description: string;
  instructions: string;
  archive: Buffer;
  files: number;
  bytes: number;
  managedBy: 'file' | 'console';
}

const SUMMARY_COLUMNS = `"id", "revision", "bytes", "files", "createdAt", "updatedAt", "lastUsedAt"`;

/**
 * The sandbox's workspaces in Postgres: every replica reads the revision before a call and unpacks
 * the archive when its own copy is older; a call that changed the workspace stores it under the next
 * revision. Calls of one workspace are serialised by its lease in Redis; the revision check on write
 * is the guard should a lease ever be lost (the write is refused, nothing is overwritten).
 */
export class SandboxWorkspaceStore {
  private readonly pool: pg.Pool;

  constructor(db: Pick<Database, 'pool'>) {
    this.pool = db.pool;
  }

  /** The stored revision, 0 when the workspace has never been written. */
  async revision(id: string): Promise<number> {
    const { rows } = await this.pool.query<{ revision: number }>('SELECT "revision" FROM "SandboxWorkspace" WHERE "id" = $1', [id]);
    return rows[0]?.revision ?? 0;
  }

  async load(id: string): Promise<WorkspaceArchive | undefined> {
    const { rows } = await this.pool.query<WorkspaceArchive>('SELECT "revision", "archive" FROM "SandboxWorkspace" WHERE "id" = $1', [id]);
    return rows[0];
  }

  /**
   * Stores the workspace as revision `after` if the stored one is still `before` (0: none stored).
   * Returns false when another writer got there first.
   */
  async save(id: string, before: number, after: number, archive: Buffer, size: { bytes: number; files: number }): Promise<boolean> {
    if (before === 0) {
      const { rowCount } = await this.pool.query(
        `INSERT INTO "SandboxWorkspace" ("id", "revision", "archive", "bytes", "files", "updatedAt", "lastUsedAt") VALUES ($1, $2, $3, $4, $5, now(), now())
         ON CONFLICT ("id") DO NOTHING`,
        [id, after, archive, size.bytes, size.files],
      );
      return rowCount === 1;
    }
    const { rowCount } = await this.pool.query(
      `UPDATE "SandboxWorkspace" SET "revision" = $3, "archive" = $4, "bytes" = $5, "files" = $6, "updatedAt" = now(), "lastUsedAt" = now()
       WHERE "id" = $1 AND "revision" = $2`,
      [id, before, after, archive, size.bytes, size.files],
    );
    return rowCount === 1;
  }

  async touch(id: string): Promise<void> {
    await this.pool.query('UPDATE "SandboxWorkspace" SET "lastUsedAt" = now() WHERE "id" = $1', [id]);
  }

  async list(limit = 500): Promise<WorkspaceSummary[]> {
    const { rows } = await this.pool.query<WorkspaceSummary>(`SELECT ${SUMMARY_COLUMNS} FROM "SandboxWorkspace" ORDER BY "lastUsedAt" DESC LIMIT $1`, [limit]);
    return rows;
  }

  async get(id: string): Promise<WorkspaceSummary | undefined> {
    const { rows } = await this.pool.query<WorkspaceSummary>(`SELECT ${SUMMARY_COLUMNS} FROM "SandboxWorkspace" WHERE "id" = $1`, [id]);
    return rows[0];
  }

  async delete(id: string): Promise<boolean> {
    const { rowCount } = await this.pool.query('DELETE FROM "SandboxWorkspace" WHERE "id" = $1', [id]);
    return rowCount === 1;
  }

  /** Deletes up to `batch` workspaces unused since `idleBefore`; returns their ids. */
  async expire(idleBefore: Date, batch = 500): Promise<string[]> {
    const { rows } = await this.pool.query<{ id: string }>(
      `DELETE FROM "SandboxWorkspace" WHERE "id" IN (SELECT "id" FROM "SandboxWorkspace" WHERE "lastUsedAt" < $1 ORDER BY "lastUsedAt" LIMIT $2) RETURNING "id"`,
      [idleBefore, batch],
    );
    return rows.map((r) => r.id);
  }
}

const SKILL_COLUMNS = `"name", "description", "files", "bytes", "revision", "managedBy", "createdAt", "updatedAt"`;

/** The installed Agent Skills. */
export class SkillStore {
  private readonly pool: pg.Pool;

  constructor(db: Pick<Database, 'pool'>) {
    this.pool = db.pool;
  }

  async list(): Promise<SkillSummary[]> {
    const { rows } = await this.pool.query<SkillSummary>(`SELECT ${SKILL_COLUMNS} FROM "Skill" ORDER BY "name" LIMIT 1000`);
    return rows;
  }

  async get(name: string): Promise<SkillRecord | undefined> {
    const { rows } = await this.pool.query<SkillRecord>(`SELECT ${SKILL_COLUMNS}, "instructions" FROM "Skill" WHERE "name" = $1`, [name]);
    return rows[0];
  }

  async archive(name: string): Promise<WorkspaceArchive | undefined> {
    const { rows } = await this.pool.query<WorkspaceArchive>('SELECT "revision", "archive" FROM "Skill" WHERE "name" = $1', [name]);
    return rows[0];
  }

  /** Installs a skill, or replaces one of the same name (its revision raised); returns the revision. */
  async install(skill: SkillToInstall): Promise<{ revision: number; created: boolean }> {
    const { rows } = await this.pool.query<{ revision: number; created: boolean }>(
      `INSERT INTO "Skill" ("name", "description", "instructions", "archive", "files", "bytes", "managedBy", "updatedAt") VALUES ($1, $2, $3, $4, $5, $6, $7, now())
       ON CONFLICT ("name") DO UPDATE SET "description" = EXCLUDED."description", "instructions" = EXCLUDED."instructions", "archive" = EXCLUDED."archive",
         "files" = EXCLUDED."files", "bytes" = EXCLUDED."bytes", "managedBy" = EXCLUDED."managedBy", "revision" = "Skill"."revision" + 1, "updatedAt" = now()
       RETURNING "revision", (xmax = 0) AS "created"`,
      [skill.name, skill.description, skill.instructions, skill.archive, skill.files, skill.bytes, skill.managedBy],
    );
    return rows[0]!;
  }

  async delete(name: string): Promise<boolean> {
    const { rowCount } = await this.pool.query('DELETE FROM "Skill" WHERE "name" = $1', [name]);
    return rowCount === 1;
  }
}
