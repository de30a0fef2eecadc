-- Requests for a person: a bot's settings for them, and the chats waiting for an operator.

-- AlterTable
ALTER TABLE "Bot" ADD COLUMN "humanHandoff" JSONB;

-- CreateTable
CREATE TABLE "HumanRequest" (
    "botId" TEXT NOT NULL,
    "launcherType" TEXT NOT NULL,
    "launcherId" TEXT NOT NULL,
    "via" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "requestedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "HumanRequest_pkey" PRIMARY KEY ("botId","launcherType","launcherId")
);
