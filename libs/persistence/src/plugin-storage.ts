import type pg from 'pg';
import { PLUGIN_LIMITS } from '@conveyor/contracts';
import type { Database } from './client.js';

/** A write a plugin's storage bounds refuse; `code` says which bound. */
export class PluginStorageError extends Error {
  constructor(readonly code: 'value_too_large' | 'too_many_keys' | 'storage_full', message: string) {
    super(message);
    this.name = 'PluginStorageError';
  }
}

export interface PluginStorageBounds {
  valueBytes: number;
  keys: number;
  bytes: number;
}

/**
 * Each plugin's own key/value storage in Postgres. Writes of one plugin are serialised by a
 * transaction-scoped advisory lock on its name, so two replicas writing at once cannot both pass the
 * bound on keys or bytes.
 */
export class PluginStorage {
  private readonly pool: pg.Pool;
  private readonly bounds: PluginStorageBounds;

  constructor(db: Pick<Database, 'pool'>, bounds: Partial<PluginStorageBounds> = {}) {
    this.pool = db.pool;
    this.bounds = { valueBytes: PLUGIN_LIMITS.storageValueBytes, keys: PLUGIN_LIMITS.storageKeys, bytes: PLUGIN_LIMITS.storageBytes, ...bounds };
  }

  async get(plugin: string, key: string): Promise<string | null> {
    const { rows } = await this.pool.query<{ value: string }>('SELECT value FROM "PluginStorageEntry" WHERE plugin = $1 AND key = $2', [plugin, key]);
    return rows[0]?.value ?? null;
  }

  /** Stores the value under the key (replacing one there); returns its size in bytes. */
  async set(plugin: string, key: string, value: string): Promise<number> {
    const bytes = Buffer.byteLength(value, 'utf8');
    if (bytes > this.bounds.valueBytes) throw new PluginStorageError('value_too_large', `a value is at most ${this.bounds.valueBytes} bytes; this one is ${bytes}`);
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`plugin-storage:${plugin}`]);
      const { rows } = await client.query<{ keys: string; total: string; mine: number | null }>(
        `SELECT count(*) AS keys, coalesce(sum(bytes), 0) AS total, max(bytes) FILTER (WHERE key = $2) AS mine
           FROM "PluginStorageEntry" WHERE plugin = $1`,
        [plugin, key],
      );
      const existing = rows[0].mine;
      const keys = Number(rows[0].keys) + (existing === null ? 1 : 0);
      const total = Number(rows[0].total) - (existing ?? 0) + bytes;
      if (keys > this.bounds.keys) throw new PluginStorageError('too_many_keys', `a plugin keeps at most ${this.bounds.keys} keys`);
      if (total > this.bounds.bytes) throw new PluginStorageError('storage_full', `a plugin keeps at most ${this.bounds.bytes} bytes; this write would make ${total}`);
      await client.query(
        `INSERT INTO "PluginStorageEntry" (plugin, key, value, bytes, "updatedAt") VALUES ($1, $2, $3, $4, now())
         ON CONFLICT (plugin, key) DO UPDATE SET value = EXCLUDED.value, bytes = EXCLUDED.bytes, "updatedAt" = now()`,
        [plugin, key, value, bytes],
      );
      await client.query('COMMIT');
      return bytes;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  async delete(plugin: string, key: string): Promise<boolean> {
    const { rowCount } = await this.pool.query('DELETE FROM "PluginStorageEntry" WHERE plugin = $1 AND key = $2', [plugin, key]);
    return (rowCount ?? 0) > 0;
  }

  /** The plugin's keys starting with `prefix`, in order (all of them: at most the key bound). */
  async keys(plugin: string, prefix = ''): Promise<string[]> {
    const { rows } = await this.pool.query<{ key: string }>(
      `SELECT key FROM "PluginStorageEntry" WHERE plugin = $1 AND starts_with(key, $2) ORDER BY key COLLATE "C" LIMIT $3`,
      [plugin, prefix, this.bounds.keys],
    );
    return rows.map((r) => r.key);
  }
}
