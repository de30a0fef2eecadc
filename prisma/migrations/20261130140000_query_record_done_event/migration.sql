-- The run's last event as its finishing attempt numbered it, so a redelivered copy of a finished run
-- can publish that event again when its runner died before it could.
ALTER TABLE "QueryRecord" ADD COLUMN "doneAttempt" INTEGER;
ALTER TABLE "QueryRecord" ADD COLUMN "doneSeq" INTEGER;
