-- Whether the span the record was written under was sampled (its trace flags): a trace id is stored
-- either way, but only a sampled trace reaches the tracing backend for the console to link.
ALTER TABLE "QueryRecord" ADD COLUMN "traceSampled" BOOLEAN;
