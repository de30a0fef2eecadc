import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type pg from 'pg';

/** What runs a statement: a pg pool (every statement parsed and planned anew) or `PreparedStatements`. */
export interface SqlStatements {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
}

/**
 * The server connection has no prepared statement of that name (26000), or already has one (42P05):
 * what a pooler in transaction mode without prepared-statement support (PgBouncer before 1.21, or
 * `max_prepared_statements = 0`) makes of named statements, since it hands each statement to any of
 * its server connections.
 */
const STATEMENT_UNAVAILABLE_CODES: ReadonlySet<string> = new Set(['26000', '42P05']);

function isStatementUnavailable(err: unknown): boolean {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string' && STATEMENT_UNAVAILABLE_CODES.has(err.code);
}

/**
 * The per-message statements as named prepared statements: each pooled connection parses and plans
 * a statement once and then only binds and executes it (the history write's six-part statement
 * spent about half its time being planned). A statement's name is a hash of its text, so one name
 * never stands for two texts, in this process or another (replicas of two versions during a rolling
 * deploy, sharing server connections through a pooler). When the server side cannot keep them, the
 * first such error turns them off for the process: that statement runs again unnamed (it never ran:
 * the error comes at parse or bind, before execution, and each statement is its own transaction), and
 * `onUnavailable` is told once.
 */
export class PreparedStatements implements SqlStatements {
  private readonly names = new LRUCache<string, string>({ max: 256 });
  private named = true;

  /** `pool`: a pool, or one client (a single session, as tests use it). */
  constructor(
    private readonly pool: pg.Pool | pg.ClientBase,
    private readonly onUnavailable: (err: unknown) => void = () => undefined,
  ) {}

  /** Whether statements still go out named (false once the server side refused one). */
  get enabled(): boolean {
    return this.named;
  }

  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<pg.QueryResult<R>> {
    if (!this.named) return this.pool.query<R>(text, values);
    try {
      return await this.pool.query<R>({ name: this.nameOf(text), text, values });
    } catch (err) {
      if (!isStatementUnavailable(err)) throw err;
      if (this.named) {
        this.named = false;
        this.onUnavailable(err);
      }
      return this.pool.query<R>(text, values);
    }
  }

  private nameOf(text: string): string {
    let name = this.names.get(text);
    if (name === undefined) {
      name = `cv_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
      this.names.set(text, name);
    }
    return name;
  }
}
