import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from './generated/prisma/client.js';

/** pg's default of 10 connections starves a service running dozens of handlers at once. */
const DEFAULT_POOL_SIZE = 20;

/** Prisma 7 has no query engine binary: it talks to Postgres through the `pg` driver adapter. */
export function createPrismaClient(databaseUrl: string, poolSize = Number(process.env.DATABASE_POOL_SIZE) || DEFAULT_POOL_SIZE): PrismaClient {
  return new PrismaClient({ adapter: new PrismaPg({ connectionString: databaseUrl, max: poolSize }) });
}
