-- Hourly rollup of the query log, so a month's dashboard reads about 24 x 30 rows per bot, pipeline,
-- model and runner instead of every query of the month. Kept exact by the database itself:
--
-- * A row trigger on "QueryRecord" appends what a write changed to "QueryRollupDelta": the old row's
--   contribution with sign -1 and the new one's with +1. Whoever writes (orchestrator, runner, the group
--   commit, an admin replica, a redelivered query updating its record again), the deltas add up to what
--   the records hold now; a redelivered write that changes nothing appends nothing, one that writes the
--   same finish again appends a -1/+1 pair that cancels. The trigger only inserts, so writers never wait
--   on each other's rollup rows (an upsert of a shared hourly row here would serialize every query of a
--   bot's hour and deadlock group-commit batches that touch two hours in different orders).
-- * The admin service folds deltas into "QueryHourlyRollup" in bounded batches under an advisory lock;
--   readers add the deltas not folded yet, so a summary is exact whether or not a fold ran.
-- * A deleted query record (the retention pruner) appends nothing: the rollup outlives the raw rows and
--   has its own age setting.
--
-- Durations go into fixed bins ("conveyor_duration_bin", mirrored in libs/admin/src/monitoring.ts) from
-- which percentiles over whole hours are estimated; counts, tokens, cost and duration sums are exact.

CREATE FUNCTION "conveyor_duration_bin"(ms DOUBLE PRECISION) RETURNS INTEGER
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT CASE WHEN ms IS NULL THEN NULL ELSE width_bucket(ms, ARRAY[1, 2, 5, 10, 20, 30, 50, 75, 100, 150, 200, 250, 300, 400, 500, 600, 750, 1000, 1250, 1500, 2000, 2500, 3000, 4000, 5000, 6000, 7500, 10000, 12500, 15000, 20000, 25000, 30000, 40000, 50000, 60000, 90000, 120000, 180000, 300000, 600000]::double precision[]) END $$;

-- CreateTable
CREATE TABLE "QueryHourlyRollup" (
    "hour" TIMESTAMP(3) NOT NULL,
    "botId" TEXT NOT NULL,
    "pipelineId" TEXT NOT NULL DEFAULT '',
    "model" TEXT NOT NULL DEFAULT '',
    "runner" TEXT NOT NULL DEFAULT '',
    "messages" INTEGER NOT NULL DEFAULT 0,
    "succeeded" INTEGER NOT NULL DEFAULT 0,
    "failed" INTEGER NOT NULL DEFAULT 0,
    "modelCalls" BIGINT NOT NULL DEFAULT 0,
    "inputTokens" BIGINT NOT NULL DEFAULT 0,
    "outputTokens" BIGINT NOT NULL DEFAULT 0,
    "cost" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "costed" INTEGER NOT NULL DEFAULT 0,
    "finished" INTEGER NOT NULL DEFAULT 0,
    "durationMs" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "durationBins" INTEGER[],

    CONSTRAINT "QueryHourlyRollup_pkey" PRIMARY KEY ("hour","botId","pipelineId","model","runner")
);

-- CreateTable
CREATE TABLE "QueryRollupDelta" (
    "id" BIGSERIAL NOT NULL,
    "sign" INTEGER NOT NULL,
    "hour" TIMESTAMP(3) NOT NULL,
    "botId" TEXT NOT NULL,
    "pipelineId" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "runner" TEXT NOT NULL,
    "succeeded" INTEGER NOT NULL,
    "failed" INTEGER NOT NULL,
    "modelCalls" INTEGER NOT NULL,
    "inputTokens" INTEGER NOT NULL,
    "outputTokens" INTEGER NOT NULL,
    "cost" DOUBLE PRECISION,
    "finished" INTEGER NOT NULL,
    "durationMs" DOUBLE PRECISION,
    "bin" INTEGER,

    CONSTRAINT "QueryRollupDelta_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "QueryRollupDelta_hour_idx" ON "QueryRollupDelta"("hour");

CREATE FUNCTION "conveyor_query_rollup_delta"() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    INSERT INTO "QueryRollupDelta" ("sign", "hour", "botId", "pipelineId", "model", "runner", "succeeded", "failed", "modelCalls", "inputTokens", "outputTokens", "cost", "finished", "durationMs", "bin")
    VALUES (-1, date_trunc('hour', OLD."receivedAt"), OLD."botId", COALESCE(OLD."pipelineId", ''), COALESCE(OLD."model", ''), COALESCE(OLD."runner", ''),
      (OLD."status" = 'succeeded')::int, (OLD."status" = 'failed')::int, COALESCE(OLD."modelCalls", 0), COALESCE(OLD."inputTokens", 0), COALESCE(OLD."outputTokens", 0), OLD."cost",
      (OLD."finishedAt" IS NOT NULL)::int, EXTRACT(EPOCH FROM (OLD."finishedAt" - OLD."receivedAt")) * 1000, "conveyor_duration_bin"(EXTRACT(EPOCH FROM (OLD."finishedAt" - OLD."receivedAt")) * 1000));
  END IF;
  INSERT INTO "QueryRollupDelta" ("sign", "hour", "botId", "pipelineId", "model", "runner", "succeeded", "failed", "modelCalls", "inputTokens", "outputTokens", "cost", "finished", "durationMs", "bin")
    VALUES (1, date_trunc('hour', NEW."receivedAt"), NEW."botId", COALESCE(NEW."pipelineId", ''), COALESCE(NEW."model", ''), COALESCE(NEW."runner", ''),
      (NEW."status" = 'succeeded')::int, (NEW."status" = 'failed')::int, COALESCE(NEW."modelCalls", 0), COALESCE(NEW."inputTokens", 0), COALESCE(NEW."outputTokens", 0), NEW."cost",
      (NEW."finishedAt" IS NOT NULL)::int, EXTRACT(EPOCH FROM (NEW."finishedAt" - NEW."receivedAt")) * 1000, "conveyor_duration_bin"(EXTRACT(EPOCH FROM (NEW."finishedAt" - NEW."receivedAt")) * 1000));
  RETURN NULL;
END
$$;

CREATE TRIGGER "QueryRecord_rollup_insert" AFTER INSERT ON "QueryRecord"
  FOR EACH ROW EXECUTE FUNCTION "conveyor_query_rollup_delta"();

-- Only a change of what the rollup counts appends deltas (a stage appended to the timeline does not).
CREATE TRIGGER "QueryRecord_rollup_update" AFTER UPDATE ON "QueryRecord"
  FOR EACH ROW WHEN (OLD."receivedAt" IS DISTINCT FROM NEW."receivedAt" OR OLD."botId" IS DISTINCT FROM NEW."botId" OR OLD."pipelineId" IS DISTINCT FROM NEW."pipelineId" OR OLD."model" IS DISTINCT FROM NEW."model" OR OLD."runner" IS DISTINCT FROM NEW."runner" OR OLD."finishedAt" IS DISTINCT FROM NEW."finishedAt" OR OLD."modelCalls" IS DISTINCT FROM NEW."modelCalls" OR OLD."inputTokens" IS DISTINCT FROM NEW."inputTokens" OR OLD."outputTokens" IS DISTINCT FROM NEW."outputTokens" OR OLD."cost" IS DISTINCT FROM NEW."cost" OR (OLD."status" IN ('succeeded', 'failed') OR NEW."status" IN ('succeeded', 'failed')) AND OLD."status" IS DISTINCT FROM NEW."status")
  EXECUTE FUNCTION "conveyor_query_rollup_delta"();

-- The records already stored, rolled up once (one scan of the query log: on a large log, apply it in
-- a quiet moment).
INSERT INTO "QueryHourlyRollup" ("hour", "botId", "pipelineId", "model", "runner", "messages", "succeeded", "failed", "modelCalls", "inputTokens",
    "outputTokens", "cost", "costed", "finished", "durationMs", "durationBins")
  SELECT date_trunc('hour', "receivedAt"), "botId", COALESCE("pipelineId", ''), COALESCE("model", ''), COALESCE("runner", ''),
    count(*)::int, (count(*) FILTER (WHERE "status" = 'succeeded'))::int, (count(*) FILTER (WHERE "status" = 'failed'))::int,
    COALESCE(sum("modelCalls"), 0), COALESCE(sum("inputTokens"), 0), COALESCE(sum("outputTokens"), 0), COALESCE(sum("cost"), 0), count("cost")::int,
    count("finishedAt")::int, COALESCE(sum(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000), 0),
    ARRAY[(count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 0))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 1))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 2))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 3))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 4))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 5))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 6))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 7))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 8))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 9))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 10))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 11))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 12))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 13))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 14))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 15))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 16))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 17))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 18))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 19))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 20))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 21))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 22))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 23))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 24))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 25))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 26))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 27))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 28))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 29))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 30))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 31))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 32))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 33))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 34))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 35))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 36))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 37))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 38))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 39))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 40))::int, (count(*) FILTER (WHERE "conveyor_duration_bin"(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000) = 41))::int]
  FROM "QueryRecord" GROUP BY 1, 2, 3, 4, 5;
