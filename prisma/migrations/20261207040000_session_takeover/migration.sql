-- Human takeover: the chats an operator answers instead of the bot.

-- CreateTable
CREATE TABLE "SessionTakeover" (
    "botId" TEXT NOT NULL,
    "launcherType" TEXT NOT NULL,
    "launcherId" TEXT NOT NULL,
    "operator" TEXT NOT NULL,
    "since" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lastOperatorAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "idleMs" INTEGER,

    CONSTRAINT "SessionTakeover_pkey" PRIMARY KEY ("botId","launcherType","launcherId")
);
