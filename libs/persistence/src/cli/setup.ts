// One-shot set-up run by `npm start` and by the deployment's migrate job: create the database when
// missing, apply pending migrations, then load CONVEYOR_CONFIG (if set) into Postgres.
// An invalid config file stops here, naming the file, the key path and the problem.
import { createDatabaseIfMissing, DEFAULT_DATABASE_URL, redactUrl } from '../database.js';
import { migrate } from '../migrate.js';
import { createPrismaClient } from '../client.js';
import { notInFileWarning, syncConfigFile } from '../config-file/index.js';

async function main(): Promise<void> {
  const databaseUrl = process.env.DATABASE_URL || DEFAULT_DATABASE_URL;
  const target = redactUrl(databaseUrl);
  if (await createDatabaseIfMissing(databaseUrl)) console.log(`setup: created database ${target}`);
  const result = await migrate({ databaseUrl });
  console.log(`setup: ${target}: ${result.applied.length} migration(s) applied, ${result.alreadyApplied.length} already applied`);
  const file = process.env.CONVEYOR_CONFIG;
  if (!file) {
    console.log('setup: CONVEYOR_CONFIG not set; no configuration file loaded');
    return;
  }
  const prisma = createPrismaClient(databaseUrl);
  try {
    const { summary } = await syncConfigFile(prisma, file);
    const counts = Object.entries(summary)
      .map(([kind, c]) => `${kind} ${JSON.stringify(c)}`)
      .join(', ');
    console.log(`setup: loaded ${file}: ${counts}`);
    const warning = notInFileWarning(file, summary);
    if (warning) console.warn(`setup: warning: ${warning}`);
  } finally {
    await prisma.$disconnect();
  }
}

main().catch((err: unknown) => {
  console.error(`setup failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
