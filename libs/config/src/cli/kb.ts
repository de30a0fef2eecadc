// `npm run kb -- add <knowledge base> <file>...`: stores documents in a knowledge base as `pending`; a
// runner publishes their ingestion jobs (its sweep, every KNOWLEDGE_SWEEP_MS) and ingests them.
// `npm run kb -- status <knowledge base>`: each document's status, progress and error.
// Env: DATABASE_URL.
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { LIMITS } from '@conveyor/contracts';
import { closeDatabase, createDatabase, DEFAULT_DATABASE_URL, documentTypeOf, KnowledgeStore } from '@conveyor/persistence';

const USAGE = 'usage: npm run kb -- add <knowledge base id> <file>... | status <knowledge base id>';

async function main(): Promise<void> {
  const [command, kb, ...files] = process.argv.slice(2);
  if (!kb || (command === 'add' && files.length === 0) || (command !== 'add' && command !== 'status')) {
    console.error(USAGE);
    process.exitCode = 2;
    return;
  }
  const db = createDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 2);
  try {
    const store = new KnowledgeStore(db);
    if (command === 'status') {
      const docs = await db.prisma.knowledgeDocument.findMany({ where: { knowledgeBaseId: kb }, orderBy: { name: 'asc' }, select: { name: true, status: true, progress: true, error: true, revision: true } });
      if (docs.length === 0) console.log(`${kb}: no documents`);
      for (const d of docs) console.log(`${d.name}\t${d.status}\t${d.progress}%\trevision ${d.revision}${d.error ? `\t${d.error}` : ''}`);
      return;
    }
    for (const file of files) {
      const type = documentTypeOf(file);
      if (!type) throw new Error(`${file}: unsupported document type (text: .txt .md .markdown .csv .log; .pdf; .docx)`);
      const size = (await stat(file)).size;
      if (size > LIMITS.knowledgeDocumentBytes) throw new Error(`${file}: ${size} bytes, more than the ${LIMITS.knowledgeDocumentBytes} a document may have`);
      const { id, revision, outcome } = await store.addDocument(kb, path.basename(file), type, await readFile(file));
      console.log(`${kb}/${path.basename(file)}: ${outcome} (document ${id}, revision ${revision})${outcome === 'unchanged' ? '' : '; a runner ingests it'}`);
    }
  } finally {
    await closeDatabase(db);
  }
}

main().catch((err: unknown) => {
  console.error(`kb failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
