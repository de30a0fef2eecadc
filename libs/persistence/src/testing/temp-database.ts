// A throwaway database per test file, so tests never share state or touch `conveyor`.
import { randomBytes } from 'node:crypto';
import { after, before } from 'node:test';
import { closeDatabase, createDatabase, type Database } from '../client.js';
import { createDatabaseIfMissing, dropDatabase } from '../database.js';
import { migrate } from '../migrate.js';

export interface TempDatabase {
  url: string;
  drop(): Promise<void>;
}

/** The server to create test databases on: TEST_DATABASE_URL, else the local `test` database's server. */
export function testServerUrl(): string {
  return process.env.TEST_DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/test';
}

/** Creates `conveyor_test_<random>`, migrated unless `migrated: false`. */
export async function createTempDatabase(options: { migrated?: boolean } = {}): Promise<TempDatabase> {
  const url = new URL(testServerUrl());
  url.pathname = `/conveyor_test_${randomBytes(6).toString('hex')}`;
  const databaseUrl = url.toString();
  await createDatabaseIfMissing(databaseUrl);
  if (options.migrated !== false) await migrate({ databaseUrl });
  return { url: databaseUrl, drop: () => dropDatabase(databaseUrl) };
}

/**
 * A migrated temporary database, with a pool on it, for the tests of one file: created before they
 * run and dropped after. Call at the top level of a test file; the returned function gives the pool.
 */
export function useTempDatabase(): () => Database {
  let temp: TempDatabase | undefined;
  let database: Database | undefined;
  before(async () => {
    temp = await createTempDatabase();
    database = createDatabase(temp.url);
  });
  after(async () => {
    if (database) await closeDatabase(database);
    await temp?.drop();
  });
  return () => {
    if (!database) throw new Error('useTempDatabase: the database is created in a before hook');
    return database;
  };
}
