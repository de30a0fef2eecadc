// Compares prisma/schema.prisma with the database the migrations build: every scalar field has a
// column of the matching type, nullability and default, no column is extra, and every @@index,
// @@unique and relation has its Prisma-named index or foreign key. Together with the CRUD test in
// migrate.test.ts this catches hand-written SQL drifting from the schema.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { findMigrationsDir } from './migrations-dir.js';
import { createTempDatabase, type TempDatabase } from './testing/temp-database.js';

const schemaFile = path.join(path.dirname(findMigrationsDir()), 'schema.prisma');

interface Field { name: string; type: string; optional: boolean; list: boolean; attrs: string }
interface Model { name: string; fields: Field[]; blockAttrs: string[] }

/** Enough of the schema language for this repository's formatting: one field per line. */
function parseSchema(text: string): Model[] {
  const models: Model[] = [];
  const source = text.replace(/\/\/.*$/gm, '');
  for (const [, name, body] of source.matchAll(/^model (\w+) \{([\s\S]*?)^\}/gm)) {
    const model: Model = { name, fields: [], blockAttrs: [] };
    for (const line of body.split('\n').map((l) => l.trim()).filter(Boolean)) {
      if (line.startsWith('@@')) { model.blockAttrs.push(line); continue; }
      const m = /^(\w+)\s+(Unsupported\("\w+"\)|\w+)(\[\])?(\?)?\s*(.*)$/.exec(line);
      assert.ok(m, `cannot parse field line ${line}`);
      model.fields.push({ name: m[1], type: m[2], list: !!m[3], optional: !!m[4], attrs: m[5] });
    }
    models.push(model);
  }
  return models;
}

/** SQL keywords among the column names, which Postgres quotes like mixed-case names. */
const KEYWORDS = new Set(['position']);

/** How pg_get_indexdef and pg_get_constraintdef print a column: quoted only when it needs quotes. */
const ident = (name: string) => (/^[a-z_][a-z0-9_]*$/.test(name) && !KEYWORDS.has(name) ? name : `"${name}"`);

const PG_TYPES: Record<string, string> = {
  'Unsupported("tsvector")': 'tsvector', String: 'text', Int: 'integer', BigInt: 'bigint', Boolean: 'boolean', DateTime: 'timestamp without time zone', Json: 'jsonb', Bytes: 'bytea', Float: 'double precision',
};

/** The element type Postgres stores for a list field: `@db.Real` narrows Float to float4. */
const listUdt = (field: Field) => (field.attrs.includes('@db.Real') ? '_float4' : field.type === 'Float' ? '_float8' : field.type === 'Int' ? '_int4' : `_${PG_TYPES[field.type]}`);

/** The primary key's columns: the `@id` field, or the block's `@@id([...])`. */
const primaryKey = (model: Model) => {
  const block = model.blockAttrs.map((a) => /^@@id\(\[([^\]]+)\]\)$/.exec(a)).find((m) => m !== null);
  return block ? block[1]!.split(',').map((c) => c.trim()) : model.fields.filter((f) => f.attrs.includes('@id')).map((f) => f.name);
};

let db: TempDatabase;
let client: pg.Client;
const models = parseSchema(readFileSync(schemaFile, 'utf8'));
const modelNames = new Set(models.map((m) => m.name));

before(async () => {
  db = await createTempDatabase();
  client = new pg.Client({ connectionString: db.url });
  await client.connect();
});

after(async () => {
  await client?.end();
  await db?.drop();
});

test('the schema parser found every model', () => {
  assert.deepEqual([...modelNames].sort(), ['AdminSession', 'AdminSetupToken', 'AdminUser', 'ApiToken', 'AuditEntry', 'Bot', 'Conversation', 'ConversationMessage', 'HumanRequest', 'InstanceSettings', 'KnowledgeBase', 'KnowledgeChunk', 'KnowledgeDocument', 'LlmModel', 'McpServer', 'Pipeline', 'PluginSetting', 'PluginStorageEntry', 'QueryHourlyRollup', 'QueryRecord', 'QueryRollupDelta', 'SandboxWorkspace', 'SessionTakeover', 'Skill']);
});

test('tables are exactly the models plus the ledger', async () => {
  const { rows } = await client.query<{ tablename: string }>("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1");
  assert.deepEqual(rows.map((r) => r.tablename), [...modelNames, '_prisma_migrations'].sort());
});

for (const model of models) {
  test(`columns of ${model.name} match its fields`, async () => {
    const { rows } = await client.query<{ column_name: string; data_type: string; udt_name: string; is_nullable: string; column_default: string | null; datetime_precision: number | null }>(
      `SELECT column_name, data_type, udt_name, is_nullable, column_default, datetime_precision
         FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position`,
      [model.name],
    );
    const scalars = model.fields.filter((f) => !modelNames.has(f.type));
    assert.deepEqual(rows.map((r) => r.column_name), scalars.map((f) => f.name), 'column names and order');
    for (const [i, field] of scalars.entries()) {
      const col = rows[i];
      const where = `${model.name}.${field.name}`;
      if (field.list) assert.equal(col.udt_name, listUdt(field), where);
      else assert.equal(col.data_type, PG_TYPES[field.type], where);
      if (field.type === 'DateTime') assert.equal(col.datetime_precision, 3, where);
      // Prisma leaves scalar lists nullable in Postgres.
      assert.equal(col.is_nullable, field.optional || field.list ? 'YES' : 'NO', where);
      const def = /@default\((.*)\)(\s|$)/.exec(field.attrs)?.[1];
      const expected =
        def === undefined || def === 'uuid()' ? null
        : def === 'now()' ? 'CURRENT_TIMESTAMP'
        : def === 'autoincrement()' ? `nextval('"${model.name}_${field.name}_seq"'::regclass)`
        : def === '[]' ? "ARRAY[]::text[]"
        : def === '""' ? "''::text"
        : def === '"{}"' ? "'{}'::jsonb"
        : /^"(.*)"$/.test(def) ? `'${def.slice(1, -1)}'::text`
        : def;
      assert.equal(col.column_default, expected, `${where} default`);
    }
    const pk = await client.query<{ conname: string; cols: string[] }>(
      `SELECT conname, array(SELECT attname FROM unnest(conkey) k JOIN pg_attribute a ON a.attrelid = conrelid AND a.attnum = k)::text[] AS cols
         FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'p'`,
      [`"${model.name}"`],
    );
    assert.deepEqual(pk.rows, [{ conname: `${model.name}_pkey`, cols: primaryKey(model) }]);
  });

  test(`indexes and foreign keys of ${model.name} match its attributes`, async () => {
    const expectedIndexes = model.blockAttrs
      .map((a) => /^@@(index|unique)\(\[([^\]]+)\](?:, type: (Gin))?\)$/.exec(a))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => {
        const cols = m[2].split(',').map((c) => c.trim());
        return `${m[1] === 'unique' ? 'CREATE UNIQUE INDEX' : 'CREATE INDEX'} "${model.name}_${cols.join('_')}_${m[1] === 'unique' ? 'key' : 'idx'}" ON public."${model.name}" USING ${m[3] ? 'gin' : 'btree'} (${cols.map(ident).join(', ')})`;
      });
    assert.equal(expectedIndexes.length, model.blockAttrs.filter((a) => !a.startsWith('@@id(')).length, 'every block attribute understood');
    const { rows } = await client.query<{ indexdef: string }>(
      "SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename = $1 AND indexname <> $2 ORDER BY indexname",
      [model.name, `${model.name}_pkey`],
    );
    assert.deepEqual(rows.map((r) => r.indexdef).sort(), expectedIndexes.sort());

    const expectedFks = model.fields
      .map((f) => ({ f, rel: /@relation\(fields: \[(\w+)\], references: \[(\w+)\](?:, onDelete: (\w+))?\)/.exec(f.attrs) }))
      .filter((x) => x.rel)
      .map(({ f, rel }) => {
        const onDelete = { Cascade: 'CASCADE', SetNull: 'SET NULL', Restrict: 'RESTRICT' }[rel![3] ?? ''] ?? 'RESTRICT';
        return `${model.name}_${rel![1]}_fkey: FOREIGN KEY (${ident(rel![1])}) REFERENCES "${f.type}"(${ident(rel![2])}) ON UPDATE CASCADE ON DELETE ${onDelete}`;
      });
    const fks = await client.query<{ conname: string; def: string }>(
      "SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'f' ORDER BY conname",
      [`"${model.name}"`],
    );
    assert.deepEqual(fks.rows.map((r) => `${r.conname}: ${r.def}`), expectedFks.sort());
  });
}
