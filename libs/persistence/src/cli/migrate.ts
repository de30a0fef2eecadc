// `npm run db:migrate`: creates the database when missing and applies pending migrations.
// Usage: node libs/persistence/dist/cli/migrate.js [migrations-dir]
// Env: DATABASE_URL, CONVEYOR_MIGRATIONS_DIR (the argument wins).
import { createDatabaseIfMissing, DEFAULT_DATABASE_URL, redactUrl } from '../database.js';
import { migrate } from '../migrate.js';

async function main(): Promise<void> {
  const databaseUrl = process.env.DATABASE_URL || DEFAULT_DATABASE_URL;
  const target = redactUrl(databaseUrl);
  if (await createDatabaseIfMissing(databaseUrl)) console.log(`created database ${target}`);
  const result = await migrate({ databaseUrl, migrationsDir: process.argv[2], log: (line) => console.log(line) });
  if (result.applied.length === 0) {
    console.log(`${target} is up to date (${result.alreadyApplied.length} migrations from ${result.migrationsDir})`);
  } else {
    console.log(`applied ${result.applied.length} migration(s) to ${target}: ${result.applied.join(', ')}`);
  }
}

main().catch((err: unknown) => {
  console.error(`db:migrate failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
