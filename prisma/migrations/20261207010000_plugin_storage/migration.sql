-- Plugins' own key/value storage, reached through the plugin host API.

-- CreateTable
CREATE TABLE "PluginStorageEntry" (
    "plugin" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "bytes" INTEGER NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "PluginStorageEntry_pkey" PRIMARY KEY ("plugin","key")
);
