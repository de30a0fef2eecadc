-- A knowledge base may be backed by a plugin's retriever instead of documents.

-- AlterTable
ALTER TABLE "KnowledgeBase" ADD COLUMN "retrieverPlugin" TEXT,
ADD COLUMN "retriever" TEXT;
