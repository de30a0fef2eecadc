-- Monitoring computed on the server: each query record carries the model that answered, the runner,
-- its model calls, token usage and cost, and the timeline of its stages; each model its prices.
-- AlterTable
ALTER TABLE "LlmModel" ADD COLUMN     "inputPricePerMTok" DOUBLE PRECISION,
ADD COLUMN     "outputPricePerMTok" DOUBLE PRECISION;

-- AlterTable
ALTER TABLE "QueryRecord" ADD COLUMN     "cost" DOUBLE PRECISION,
ADD COLUMN     "inputTokens" INTEGER,
ADD COLUMN     "model" TEXT,
ADD COLUMN     "modelCalls" INTEGER,
ADD COLUMN     "outputTokens" INTEGER,
ADD COLUMN     "runner" TEXT,
ADD COLUMN     "stages" JSONB;

-- CreateIndex
CREATE INDEX "QueryRecord_pipelineId_receivedAt_idx" ON "QueryRecord"("pipelineId", "receivedAt");

-- CreateIndex
CREATE INDEX "QueryRecord_model_receivedAt_idx" ON "QueryRecord"("model", "receivedAt");
