-- Full-text and hybrid search of knowledge bases: each chunk's search terms as a tsvector (computed by
-- the application, which cuts CJK text into bigrams; null until the runner's sweep fills chunks written
-- before this migration), and each knowledge base's retrieval mode. Existing knowledge bases keep
-- vector search; new ones search both ways.

-- AlterTable
ALTER TABLE "KnowledgeBase" ADD COLUMN "retrievalMode" TEXT NOT NULL DEFAULT 'vector';
ALTER TABLE "KnowledgeBase" ALTER COLUMN "retrievalMode" SET DEFAULT 'hybrid';

-- AlterTable
ALTER TABLE "KnowledgeChunk" ADD COLUMN "terms" tsvector;

-- CreateIndex
CREATE INDEX "KnowledgeChunk_terms_idx" ON "KnowledgeChunk" USING GIN ("terms");
