// One-shot set-up run by `npm start` and by the deployment's migrate job: create the database when
// missing, apply pending migrations, then load CONVEYOR_CONFIG (if set) into Postgres.
// An invalid config file stops here, naming the file, the key path and the problem.
import { createDatabaseIfMissing, DEFAULT_DATABASE_URL, redactUrl } from '../database.js';
import { migrate } from '../migrate.js';
import { closeDatabase, createDatabase } from '../client.js';
import { notInFileWarning, storeKnowledgeDocuments, syncConfigFile } from '../config-file/index.js';
import { enablePgvector, KnowledgeStore } from '../knowledge-store.js';

async function main(): Promise<void> {
  const databaseUrl = process.env.DATABASE_URL || DEFAULT_DATABASE_URL;
  const target = redactUrl(databaseUrl);
  if (await createDatabaseIfMissing(databaseUrl)) console.log(`setup: created database ${target}`);
  const result = await migrate({ databaseUrl });
  console.log(`setup: ${target}: ${result.applied.length} migration(s) applied, ${result.alreadyApplied.length} already applied`);
  const vector = createDatabase(databaseUrl, 1);
  try {
    const pgvector = await enablePgvector(vector.pool);
    console.log(`setup: pgvector ${typeof pgvector === 'string' ? pgvector : `not enabled (${pgvector.failed})`}; knowledge base search is ${pgvector === 'enabled' ? 'indexed (HNSW)' : 'exact'}`);
  } finally {
    await closeDatabase(vector);
  }
  const file = process.env.CONVEYOR_CONFIG;
  if (!file) {
    console.log('setup: CONVEYOR_CONFIG not set; no configuration file loaded');
    return;
  }
  const db = createDatabase(databaseUrl, 4);
  try {
    const { config, summary } = await syncConfigFile(db.prisma, file);
    const counts = Object.entries(summary)
      .map(([kind, c]) => `${kind} ${JSON.stringify(c)}`)
      .join(', ');
    console.log(`setup: loaded ${file}: ${counts}`);
    const warning = notInFileWarning(file, summary);
    if (warning) console.warn(`setup: warning: ${warning}`);
    // Documents wait as `pending`; a runner publishes their ingestion jobs (it sweeps pending documents).
    const documents = await storeKnowledgeDocuments(new KnowledgeStore(db), config);
    if (documents.length) {
      const by = (outcome: string) => documents.filter((d) => d.outcome === outcome).map((d) => `${d.knowledgeBaseId}/${d.name}`);
      console.log(`setup: knowledge documents: created ${JSON.stringify(by('created'))}, replaced ${JSON.stringify(by('replaced'))}, unchanged ${by('unchanged').length}`);
    }
  } finally {
    await closeDatabase(db);
  }
}

main().catch((err: unknown) => {
  console.error(`setup failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
