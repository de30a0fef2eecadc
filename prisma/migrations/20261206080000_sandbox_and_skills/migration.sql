-- The sandbox role's workspaces (gzipped tars any replica can unpack) and the installed Agent Skills.

-- CreateTable
CREATE TABLE "SandboxWorkspace" (
    "id" TEXT NOT NULL,
    "revision" INTEGER NOT NULL DEFAULT 1,
    "archive" BYTEA NOT NULL,
    "bytes" INTEGER NOT NULL,
    "files" INTEGER NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,
    "lastUsedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "SandboxWorkspace_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "SandboxWorkspace_lastUsedAt_idx" ON "SandboxWorkspace"("lastUsedAt");

-- CreateTable
CREATE TABLE "Skill" (
    "name" TEXT NOT NULL,
    "description" TEXT NOT NULL,
    "instructions" TEXT NOT NULL,
    "archive" BYTEA NOT NULL,
    "files" INTEGER NOT NULL,
    "bytes" INTEGER NOT NULL,
    "revision" INTEGER NOT NULL DEFAULT 1,
    "managedBy" TEXT NOT NULL DEFAULT 'console',
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Skill_pkey" PRIMARY KEY ("name")
);
