import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { KnowledgeStore } from '@conveyor/persistence';
import { useTempDatabase } from '@conveyor/persistence/testing';
import { syncConfigFile } from './apply.js';
import { ConfigFileError } from './errors.js';
import { storeKnowledgeDocuments, syncKnowledgeBases } from './knowledge-documents.js';

const database = useTempDatabase();

const yaml = (documents: string[]) => `
models:
  - {id: embed, baseUrl: "http://127.0.0.1:1/v1", model: e, abilities: [embedding]}
knowledgeBases:
  - id: handbook
    embeddingModel: embed
    chunkSize: 300
    chunkOverlap: 30
    documents: ${JSON.stringify(documents)}
`;

test('setup stores a knowledge base and its documents once; a changed file gets a new revision', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'conveyor-kb-'));
  try {
    const file = path.join(dir, 'conveyor.yaml');
    writeFileSync(path.join(dir, 'faq.md'), '# FAQ\nAsk us.');
    writeFileSync(file, yaml(['faq.md']));
    const store = new KnowledgeStore(database());
    const first = await syncConfigFile(database().prisma, file);
    assert.deepEqual((await syncKnowledgeBases(database().prisma, store, first.config)).created, ['handbook']);
    const kb = await database().prisma.knowledgeBase.findUniqueOrThrow({ where: { id: 'handbook' } });
    assert.deepEqual([kb.embeddingModelId, kb.topK, kb.chunkSize, kb.chunkOverlap, kb.rerankModelId], ['embed', 5, 300, 30, null]);
    const stored = await storeKnowledgeDocuments(store, first.config);
    assert.deepEqual(stored.map((d) => [d.name, d.outcome, d.revision]), [['faq.md', 'created', 1]]);
    assert.deepEqual((await store.pending()).map((p) => p.id), [stored[0].documentId], 'pending until a runner ingests it');

    const again = await syncConfigFile(database().prisma, file);
    assert.deepEqual(await syncKnowledgeBases(database().prisma, store, again.config), { created: [], updated: [], unchanged: ['handbook'], rechunked: [] });
    assert.deepEqual((await storeKnowledgeDocuments(store, again.config)).map((d) => d.outcome), ['unchanged']);

    writeFileSync(path.join(dir, 'faq.md'), '# FAQ\nAsk us anything.');
    assert.deepEqual((await storeKnowledgeDocuments(store, again.config)).map((d) => [d.outcome, d.revision]), [['replaced', 2]]);

    writeFileSync(file, yaml(['faq.md']).replace('chunkSize: 300', 'chunkSize: 200\n    retrievalMode: fulltext'));
    const rechunked = await syncConfigFile(database().prisma, file);
    assert.deepEqual(await syncKnowledgeBases(database().prisma, store, rechunked.config), { created: [], updated: ['handbook'], unchanged: [], rechunked: ['handbook'] });
    const changed = await database().prisma.knowledgeBase.findUniqueOrThrow({ where: { id: 'handbook' } });
    assert.deepEqual([changed.chunkSize, changed.retrievalMode], [200, 'fulltext']);
    assert.deepEqual((await store.pending()).map((p) => [p.id, p.revision]), [[stored[0].documentId, 3]], 'new chunking ingests the document again');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a missing or unsupported document, or an unknown embedding model, stops setup naming it', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'conveyor-kb-'));
  try {
    const file = path.join(dir, 'conveyor.yaml');
    writeFileSync(path.join(dir, 'tool.exe'), 'MZ');
    writeFileSync(file, yaml(['missing.md', 'tool.exe']));
    const { config } = await syncConfigFile(database().prisma, file);
    await syncKnowledgeBases(database().prisma, new KnowledgeStore(database()), config);
    await assert.rejects(storeKnowledgeDocuments(new KnowledgeStore(database()), config), (err: unknown) => {
      assert.ok(err instanceof ConfigFileError);
      assert.match(err.message, /missing\.md: cannot read the file/);
      assert.match(err.message, /tool\.exe: unsupported document type/);
      return true;
    });
    writeFileSync(file, yaml([]).replace('embeddingModel: embed', 'embeddingModel: nope'));
    await assert.rejects(syncConfigFile(database().prisma, file), /knowledgeBases\[0\]\.embeddingModel: unknown model "nope"/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
