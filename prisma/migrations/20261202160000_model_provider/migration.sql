-- A model names the API it is reached through; every existing model is OpenAI-compatible.
-- AlterTable
ALTER TABLE "LlmModel" ADD COLUMN     "provider" TEXT NOT NULL DEFAULT 'openai';
