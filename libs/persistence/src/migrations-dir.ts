// Reads a migrations folder in Prisma's layout: `<name>/migration.sql` per migration, applied in
// name order, plus `migration_lock.toml` naming the provider.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MigrationError } from './migration-error.js';

export interface LocalMigration {
  name: string;
  /** The script exactly as stored, decoded as UTF-8 (what Prisma hashes). */
  script: string;
}

export const MIGRATIONS_DIR_ENV = 'CONVEYOR_MIGRATIONS_DIR';

/** Walks up from `start` (this module by default) to the first `prisma/migrations` folder. */
export function findMigrationsDir(start: string = path.dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = path.resolve(start); ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'prisma', 'migrations');
    if (existsSync(candidate) && statSync(candidate).isDirectory()) return candidate;
    if (path.dirname(dir) === dir) throw new MigrationError(`no prisma/migrations folder above ${start}`);
  }
}

/** An explicit argument wins, then CONVEYOR_MIGRATIONS_DIR, then the folder above this module. */
export function resolveMigrationsDir(explicit?: string): string {
  const chosen = explicit || process.env[MIGRATIONS_DIR_ENV];
  return chosen ? path.resolve(chosen) : findMigrationsDir();
}

export function readMigrations(dir: string): LocalMigration[] {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new MigrationError(`migrations folder ${dir} does not exist`);
  checkLockFile(dir);
  // Byte order, as Prisma sorts the folder names; the timestamp prefix makes it chronological.
  const names = readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return names.map((name) => {
    const file = path.join(dir, name, 'migration.sql');
    if (!existsSync(file)) throw new MigrationError(`migration ${name} has no migration.sql (${file})`);
    const script = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(readFileSync(file));
    return { name, script };
  });
}

function checkLockFile(dir: string): void {
  const lockFile = path.join(dir, 'migration_lock.toml');
  if (!existsSync(lockFile)) return;
  const provider = /^\s*provider\s*=\s*"([^"]*)"/m.exec(readFileSync(lockFile, 'utf8'))?.[1];
  if (provider !== 'postgresql') {
    throw new MigrationError(`${lockFile} names provider ${JSON.stringify(provider)}, but these migrations run on postgresql`);
  }
}
