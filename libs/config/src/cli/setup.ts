// One-shot set-up run by `npm start` and by the deployment's migrate job: create the database when
// missing, apply pending migrations, then make the database hold what CONVEYOR_CONFIG (if set) says.
// An invalid config file stops here, naming the file, the key path and the problem.
// `--dry-run` changes nothing: it prints what applying the file would change in a database that
// is already migrated.
// The database may still be starting (it is started beside this job): connection failures are
// retried for SETUP_DATABASE_WAIT_SECONDS (120) before the job fails.
import { closeDatabase, createDatabase, createDatabaseIfMissing, DEFAULT_DATABASE_URL, enablePgvector, KnowledgeStore, migrate, redactUrl, waitForDatabase } from '@conveyor/persistence';
import { describeChanges, notManagedWarning, storeKnowledgeDocuments, syncConfigFile, syncKnowledgeBases } from '../index.js';
import { announceConfigChanges, configChangesOf } from './announce.js';

async function main(): Promise<void> {
  const dryRun = process.argv.slice(2).includes('--dry-run');
  const databaseUrl = process.env.DATABASE_URL || DEFAULT_DATABASE_URL;
  const target = redactUrl(databaseUrl);
  const waitSeconds = Number(process.env.SETUP_DATABASE_WAIT_SECONDS ?? 120);
  if (!Number.isFinite(waitSeconds) || waitSeconds < 0) throw new Error(`SETUP_DATABASE_WAIT_SECONDS must be a number of seconds ≥ 0, got ${JSON.stringify(process.env.SETUP_DATABASE_WAIT_SECONDS)}`);
  let reported = false;
  await waitForDatabase(databaseUrl, {
    timeoutMs: waitSeconds * 1000,
    onUnavailable: (err) => {
      if (reported) return;
      reported = true;
      console.log(`setup: waiting up to ${waitSeconds} s for ${target} (${(err as { code?: string }).code})`);
    },
  });
  const db = createDatabase(databaseUrl, 4);
  try {
    if (!dryRun) {
      if (await createDatabaseIfMissing(databaseUrl)) console.log(`setup: created database ${target}`);
      const result = await migrate({ databaseUrl });
      console.log(`setup: ${target}: ${result.applied.length} migration(s) applied, ${result.alreadyApplied.length} already applied`);
      const pgvector = await enablePgvector(db.pool);
      console.log(`setup: pgvector ${typeof pgvector === 'string' ? pgvector : `not enabled (${pgvector.failed})`}; knowledge base search is ${pgvector === 'enabled' ? 'indexed (HNSW)' : 'exact'}`);
    }
    const file = process.env.CONVEYOR_CONFIG;
    if (!file) {
      console.log('setup: CONVEYOR_CONFIG not set; no configuration file loaded');
      return;
    }
    const { config, summary } = await syncConfigFile(db.prisma, file, { dryRun });
    const changes = describeChanges(summary);
    if (dryRun) {
      console.log(`setup: dry run: applying ${file} to ${target} would change ${changes.length ? '' : 'nothing'}`);
      for (const line of changes) console.log(`  ${line}`);
    } else {
      console.log(`setup: loaded ${file}: ${changes.length ? changes.join('; ') : 'no changes'}`);
    }
    const warning = notManagedWarning(file, summary);
    if (warning) console.warn(`setup: warning: ${warning}`);
    if (dryRun) return;
    const announced = await announceConfigChanges(await configChangesOf(db.prisma, summary));
    if (typeof announced === 'number') {
      if (announced) console.log(`setup: announced ${announced} configuration change(s) to the running services`);
    } else {
      console.log(`setup: configuration changes not announced: ${announced.skipped}; running services pick them up within their cache safety TTL`);
    }
    const kbs = await syncKnowledgeBases(db.prisma, new KnowledgeStore(db), config);
    if (kbs.created.length + kbs.updated.length) console.log(`setup: knowledge bases: created ${JSON.stringify(kbs.created)}, updated ${JSON.stringify(kbs.updated)}${kbs.rechunked.length ? `, ingesting again (new embedding model or chunking) ${JSON.stringify(kbs.rechunked)}` : ''}`);
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
