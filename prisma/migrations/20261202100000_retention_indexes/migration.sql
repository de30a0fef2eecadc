-- The retention pruner finds what is past its age by these columns, oldest first, a bounded batch at a
-- time: without an index each batch would scan the whole table. (AuditEntry already has one on "at".)
-- CreateIndex
CREATE INDEX "QueryRecord_receivedAt_idx" ON "QueryRecord"("receivedAt");

-- CreateIndex
CREATE INDEX "Conversation_updatedAt_idx" ON "Conversation"("updatedAt");
