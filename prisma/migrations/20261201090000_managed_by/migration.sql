-- Who owns a configuration row: `file` (conveyor.yaml, applied by setup as the desired state, which
-- retires the rows it no longer names) or anything else, which a file apply leaves alone. Rows that
-- exist already were created by setup, the only writer so far, so they belong to the file; rows
-- written by other means from now on do not.
ALTER TABLE "Bot" ADD COLUMN "managedBy" TEXT NOT NULL DEFAULT 'file';
ALTER TABLE "Bot" ALTER COLUMN "managedBy" SET DEFAULT 'console';
ALTER TABLE "Pipeline" ADD COLUMN "managedBy" TEXT NOT NULL DEFAULT 'file';
ALTER TABLE "Pipeline" ALTER COLUMN "managedBy" SET DEFAULT 'console';
ALTER TABLE "LlmModel" ADD COLUMN "managedBy" TEXT NOT NULL DEFAULT 'file';
ALTER TABLE "LlmModel" ALTER COLUMN "managedBy" SET DEFAULT 'console';
ALTER TABLE "McpServer" ADD COLUMN "managedBy" TEXT NOT NULL DEFAULT 'file';
ALTER TABLE "McpServer" ALTER COLUMN "managedBy" SET DEFAULT 'console';
