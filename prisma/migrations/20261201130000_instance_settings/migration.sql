-- The instance settings written through the admin API (command prefix and switch, ban words): one row.
-- And a switch to disable an admin user without deleting them.
ALTER TABLE "AdminUser" ADD COLUMN "disabled" BOOLEAN NOT NULL DEFAULT false;

-- CreateTable
CREATE TABLE "InstanceSettings" (
    "id" TEXT NOT NULL,
    "values" JSONB NOT NULL DEFAULT '{}',
    "version" INTEGER NOT NULL DEFAULT 1,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "InstanceSettings_pkey" PRIMARY KEY ("id")
);
