import { createHash, randomUUID } from 'node:crypto';
import { chown, mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { LRUCache } from 'lru-cache';
import type { SandboxWorkspaceStore, SkillStore } from '@conveyor/persistence';
import type { MountedSkill } from '@conveyor/contracts';
import { unpackArchive } from '../skills/archive.js';
import type { Bubblewrap } from './bubblewrap.js';
import { SKILL_LIMITS } from '../skills/skills.js';
import { measureWorkspace, type WorkspaceSize } from './workspace-fs.js';

/** The workspace grew past its cap during a call: the call's changes are undone. */
export class WorkspaceFullError extends Error {
  readonly code = 'limit';
}

/** A workspace's folder on this replica, at the revision it was unpacked from. */
export interface WorkspaceCopy {
  id: string;
  dir: string;
  revision: number;
  size: WorkspaceSize;
}

export interface LocalCopiesOptions {
  /** Folder under which this replica keeps its copies (an emptyDir in Kubernetes). */
  root: string;
  workspaces: SandboxWorkspaceStore;
  skills: SkillStore;
  /** Packs and unpacks workspaces inside the sandbox (what a command left is never read on the host). */
  archiver: Pick<Bubblewrap, 'pack' | 'unpack'>;
  /** Bytes and files one workspace may hold (unpacked). */
  maxBytes: number;
  maxFiles: number;
  /** Workspaces whose copies this replica keeps between calls. */
  maxCopies: number;
  owner?: { uid: number; gid: number };
}

/** How often the last use of an unchanged workspace is written (it decides the idle expiry, not more). */
const TOUCH_EVERY_MS = 60_000;

function folderName(id: string): string {
  return createHash('sha256').update(id).digest('hex').slice(0, 40);
}

/**
 * The copies of workspaces and skills one replica works on, kept in step with Postgres: before a
 * call the stored revision is read (one indexed read) and a copy that is older, or missing, is
 * unpacked again; after a call that changed the folder it is packed and stored under the next
 * revision. So any replica can serve a workspace's next call, and a replica that died mid-call left
 * nothing behind but its own folder.
 */
export class LocalCopies {
  private readonly copies: LRUCache<string, WorkspaceCopy>;
  private readonly skills = new Map<string, { revision: number; dir: string }>();
  private readonly touched = new Map<string, number>();

  constructor(private readonly o: LocalCopiesOptions) {
    // A copy replaced by its own next revision keeps its folder (`set`); one evicted or dropped loses it.
    this.copies = new LRUCache({
      max: o.maxCopies,
      dispose: (copy, _id, reason) => {
        if (reason !== 'set') void rm(copy.dir, { recursive: true, force: true }).catch(() => undefined);
      },
    });
  }

  get held(): number {
    return this.copies.size;
  }

  /** The workspace's folder at its stored revision. */
  async open(id: string): Promise<WorkspaceCopy & { restored: boolean }> {
    const stored = await this.o.workspaces.revision(id);
    const copy = this.copies.get(id);
    if (copy && copy.revision === stored) return { ...copy, restored: false };
    this.copies.delete(id);
    // A folder of its own per unpack: an older copy's folder, removed in the background, is never this one.
    const dir = path.join(this.o.root, 'workspaces', `${folderName(id)}-${randomUUID().slice(0, 8)}`);
    await this.makeDir(dir);
    let revision = 0;
    if (stored > 0) {
      const saved = await this.o.workspaces.load(id);
      if (saved) {
        await this.o.archiver.unpack(dir, saved.archive);
        revision = saved.revision;
      }
    }
    const fresh: WorkspaceCopy = { id, dir, revision, size: await measureWorkspace(dir) };
    this.copies.set(id, fresh);
    return { ...fresh, restored: stored > 0 };
  }

  /**
   * After a call: stores the folder under the next revision when it changed. A folder past the cap is
   * dropped (the next call unpacks the stored revision) and WorkspaceFullError thrown.
   */
  async close(copy: WorkspaceCopy): Promise<number> {
    const size = await measureWorkspace(copy.dir);
    if (size.fingerprint === copy.size.fingerprint) {
      await this.touch(copy.id);
      return copy.revision;
    }
    if (size.bytes > this.o.maxBytes || size.files > this.o.maxFiles || size.truncated) {
      this.drop(copy.id);
      throw new WorkspaceFullError(`the workspace grew to ${size.bytes} bytes in ${size.files}${size.truncated ? '+' : ''} entries, past its cap of ${this.o.maxBytes} bytes and ${this.o.maxFiles} entries; this call's changes were undone`);
    }
    const archive = await this.o.archiver.pack(copy.dir, this.o.maxBytes);
    const next = copy.revision + 1;
    if (!(await this.o.workspaces.save(copy.id, copy.revision, next, archive, size))) {
      // Another writer stored a revision meanwhile (a lease lost to an outage): keep theirs.
      this.drop(copy.id);
      throw new Error('the workspace was changed elsewhere during this call; this call\'s changes were not kept');
    }
    this.touched.set(copy.id, Date.now());
    this.copies.set(copy.id, { ...copy, revision: next, size });
    return next;
  }

  /** Forgets this replica's copy (after a failed call): the next call unpacks the stored revision. */
  drop(id: string): void {
    this.copies.delete(id);
  }

  /** Folders of the skills a call mounts, unpacked once per revision. */
  async skillDirs(mounted: readonly MountedSkill[]): Promise<Map<string, string>> {
    const dirs = new Map<string, string>();
    for (const skill of mounted) {
      const held = this.skills.get(skill.name);
      if (held && held.revision >= skill.revision) {
        dirs.set(skill.name, held.dir);
        continue;
      }
      const stored = await this.o.skills.archive(skill.name);
      if (!stored) continue;
      const dir = path.join(this.o.root, 'skills', `${skill.name}@${stored.revision}`);
      await rm(dir, { recursive: true, force: true });
      await unpackArchive(stored.archive, dir, { maxBytes: SKILL_LIMITS.bytes, maxFiles: SKILL_LIMITS.files });
      if (held && held.dir !== dir) await rm(held.dir, { recursive: true, force: true });
      this.skills.set(skill.name, { revision: stored.revision, dir });
      dirs.set(skill.name, dir);
    }
    return dirs;
  }

  async clear(): Promise<void> {
    this.copies.clear();
    await rm(path.join(this.o.root, 'skills'), { recursive: true, force: true });
  }

  private async touch(id: string): Promise<void> {
    const last = this.touched.get(id) ?? 0;
    if (Date.now() - last < TOUCH_EVERY_MS) return;
    this.touched.set(id, Date.now());
    if (this.touched.size > 10_000) this.touched.clear();
    await this.o.workspaces.touch(id);
  }

  private async makeDir(dir: string): Promise<void> {
    await mkdir(dir, { recursive: true, mode: 0o755 });
    if (this.o.owner) await chown(dir, this.o.owner.uid, this.o.owner.gid);
  }
}
