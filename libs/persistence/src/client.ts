import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from './generated/prisma/client.js';
import { PreparedStatements, type SqlStatements } from './prepared-statements.js';

/** pg's default of 10 connections starves a service running dozens of handlers at once. */
export const DEFAULT_POOL_SIZE = 20;

function poolSizeFromEnv(): number {
  return Number(process.env.DATABASE_POOL_SIZE) || DEFAULT_POOL_SIZE;
}

/**
 * A service's database: Prisma for the schema, configuration and admin paths, and the same pg pool for
 * the per-message statements, which skip the ORM's runtime (it cost a quarter of the orchestrator's CPU)
 * and go out as prepared statements (`statements`).
 */
export interface Database {
  prisma: PrismaClient;
  pool: pg.Pool;
  statements: SqlStatements;
}

export interface DatabaseOptions {
  /** Told once when the server side cannot keep prepared statements (see PreparedStatements). */
  onPreparedStatementsUnavailable?: (err: unknown) => void;
}

export function createDatabase(databaseUrl: string, poolSize = poolSizeFromEnv(), options: DatabaseOptions = {}): Database {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: poolSize });
  // An idle client that loses its connection (a Postgres restart) emits here; the pool replaces it.
  pool.on('error', () => undefined);
  return { pool, prisma: new PrismaClient({ adapter: new PrismaPg(pool) }), statements: new PreparedStatements(pool, options.onPreparedStatementsUnavailable) };
}

export async function closeDatabase(db: Database): Promise<void> {
  await db.prisma.$disconnect().catch(() => undefined);
  await db.pool.end().catch(() => undefined);
}

/** Prisma 7 has no query engine binary: it talks to Postgres through the `pg` driver adapter. */
export function createPrismaClient(databaseUrl: string, poolSize = poolSizeFromEnv()): PrismaClient {
  return new PrismaClient({ adapter: new PrismaPg({ connectionString: databaseUrl, max: poolSize }) });
}
