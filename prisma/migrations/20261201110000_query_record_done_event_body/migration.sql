-- A run's answer travels in its last event (no separate `done` follows it): the record keeps that
-- event's body, so a redelivered copy of the finished run can publish it again if its runner died first.
ALTER TABLE "QueryRecord" ADD COLUMN "doneEvent" JSONB;
