-- Plugin settings per installation and per pipeline, filled in through the admin API and console.

-- CreateTable
CREATE TABLE "PluginSetting" (
    "plugin" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "values" JSONB NOT NULL,
    "version" INTEGER NOT NULL DEFAULT 1,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "PluginSetting_pkey" PRIMARY KEY ("plugin","scope")
);
