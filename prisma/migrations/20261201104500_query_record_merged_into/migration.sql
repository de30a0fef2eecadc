-- Message aggregation answers several messages with one query: each merged-away message names it.
ALTER TABLE "QueryRecord" ADD COLUMN "mergedInto" TEXT;
