// One-shot set-up run by `npm start` and by the deployment's migrate job: create the database when
// missing, apply pending migrations, then make the database hold what CONVEYOR_CONFIG (if set) says.
// An invalid config file stops here, naming the file, the key path and the problem.
// `--dry-run` changes nothing: it prints what applying the file would change in a database that
// is already migrated.
import { createDatabaseIfMissing, DEFAULT_DATABASE_URL, redactUrl } from '../database.js';
import { migrate } from '../migrate.js';
import { createPrismaClient } from '../client.js';
import { describeChanges, notManagedWarning, syncConfigFile } from '../config-file/index.js';

async function main(): Promise<void> {
  const dryRun = process.argv.slice(2).includes('--dry-run');
  const databaseUrl = process.env.DATABASE_URL || DEFAULT_DATABASE_URL;
  const target = redactUrl(databaseUrl);
  if (!dryRun) {
    if (await createDatabaseIfMissing(databaseUrl)) console.log(`setup: created database ${target}`);
    const result = await migrate({ databaseUrl });
    console.log(`setup: ${target}: ${result.applied.length} migration(s) applied, ${result.alreadyApplied.length} already applied`);
  }
  const file = process.env.CONVEYOR_CONFIG;
  if (!file) {
    console.log('setup: CONVEYOR_CONFIG not set; no configuration file loaded');
    return;
  }
  const prisma = createPrismaClient(databaseUrl);
  try {
    const { summary } = await syncConfigFile(prisma, file, { dryRun });
    const changes = describeChanges(summary);
    if (dryRun) {
      console.log(`setup: dry run: applying ${file} to ${target} would change ${changes.length ? '' : 'nothing'}`);
      for (const line of changes) console.log(`  ${line}`);
    } else {
      console.log(`setup: loaded ${file}: ${changes.length ? changes.join('; ') : 'no changes'}`);
    }
    const warning = notManagedWarning(file, summary);
    if (warning) console.warn(`setup: warning: ${warning}`);
  } finally {
    await prisma.$disconnect();
  }
}

main().catch((err: unknown) => {
  console.error(`setup failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
