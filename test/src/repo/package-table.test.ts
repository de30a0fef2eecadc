import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository: this file runs from test/dist/repo. */
const root = fileURLToPath(new URL('../../../', import.meta.url));
const SCOPE = '@conveyor/';
/** Folders whose packages the table must describe one row each, with their Conveyor dependencies. */
const PACKAGE_PARENTS = ['libs', 'libs/platforms', 'services', 'apps', 'examples'];

interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
}

interface Row {
  dir: string;
  /** The package name the row gives in brackets after the folder, if any. */
  alias?: string;
  /** The Conveyor packages the third column names before any `;`, by their short names. */
  named: string[];
}

/** Every package folder under PACKAGE_PARENTS (a folder with a package.json), with its manifest. */
function packages(): Map<string, Manifest> {
  const out = new Map<string, Manifest>();
  for (const parent of PACKAGE_PARENTS) {
    for (const entry of readdirSync(path.join(root, parent), { withFileTypes: true })) {
      const file = path.join(root, parent, entry.name, 'package.json');
      if (entry.isDirectory() && existsSync(file)) out.set(`${parent}/${entry.name}`, JSON.parse(readFileSync(file, 'utf8')) as Manifest);
    }
  }
  return out;
}

/**
 * The rows of the package table in docs/ARCHITECTURE.md's "Packages" section: `| \`dir\` (\`@conveyor/x\`)? | job | deps |`.
 * The third column lists short names (`@conveyor/<short>`), comma-separated, `—` for none; words in
 * brackets explain a dependency and are not names; after `;` comes anything else worth knowing.
 */
function tableRows(doc: string): Row[] {
  const start = doc.search(/^## Packages/m);
  assert.ok(start >= 0, 'docs/ARCHITECTURE.md has no "## Packages" section');
  const end = doc.slice(start + 1).search(/^## /m);
  const section = doc.slice(start, end < 0 ? undefined : start + 1 + end);
  const rows: Row[] = [];
  for (const line of section.split('\n')) {
    const m = /^\| `([^`]+)`(?: \(`([^`]+)`\))? \|.*\| ([^|]*) \|$/.exec(line);
    if (!m) continue;
    const names = m[3].split(';')[0].replace(/\([^)]*\)/g, '').split(',').map((t) => t.trim()).filter((t) => t !== '' && t !== '—');
    rows.push({ dir: m[1], alias: m[2], named: names });
  }
  return rows;
}

const shortName = (name: string) => (name.startsWith(SCOPE) ? name.slice(SCOPE.length) : name);

/** What is wrong with the table, one line per row, empty when it matches the manifests. */
function packageTableProblems(doc: string, manifests: Map<string, Manifest>): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const row of tableRows(doc)) {
    const where = `docs/ARCHITECTURE.md package table, row \`${row.dir}\``;
    if (!PACKAGE_PARENTS.some((p) => row.dir.startsWith(`${p}/`))) continue; // the test and bench rows say "what they exercise" in words
    if (seen.has(row.dir)) problems.push(`${where}: appears twice`);
    seen.add(row.dir);
    const manifest = manifests.get(row.dir);
    if (!manifest) {
      problems.push(`${where}: there is no ${row.dir}/package.json`);
      continue;
    }
    if (row.alias !== undefined && row.alias !== manifest.name) problems.push(`${where}: says it is ${row.alias}, its package.json names ${manifest.name}`);
    const actual = Object.keys(manifest.dependencies ?? {}).filter((d) => d.startsWith(SCOPE)).map(shortName);
    const missing = actual.filter((d) => !row.named.includes(d));
    const extra = row.named.filter((d) => !actual.includes(d));
    if (missing.length) problems.push(`${where}: leaves out ${missing.join(', ')}, which ${row.dir}/package.json depends on`);
    if (extra.length) problems.push(`${where}: names ${extra.join(', ')}, which ${row.dir}/package.json does not depend on`);
  }
  for (const dir of manifests.keys()) if (!seen.has(dir)) problems.push(`docs/ARCHITECTURE.md package table: no row for \`${dir}\` (${manifests.get(dir)!.name})`);
  return problems;
}

test('every package has a row in the architecture document\'s package table, naming the Conveyor packages its package.json depends on', () => {
  const doc = readFileSync(path.join(root, 'docs/ARCHITECTURE.md'), 'utf8');
  const manifests = packages();
  assert.ok(manifests.size >= 30, `only ${manifests.size} packages found under ${PACKAGE_PARENTS.join(', ')}: has the layout changed?`);
  assert.ok(tableRows(doc).length >= 30, 'fewer than 30 rows read from the package table: has its format changed?');
  const problems = packageTableProblems(doc, manifests);
  assert.equal(problems.length, 0, `the package table differs from the package.json files:\n${problems.join('\n')}`);
});

test('the package table check names the row and what differs', () => {
  const doc = [
    '## Packages',
    '',
    '| package | job | depends on |',
    '|---|---|---|',
    '| `libs/a` | one | —; zod |',
    '| `libs/b` | two | a, c (why c) |',
    '| `libs/platforms/r` (`@conveyor/reg`) | three | a |',
    '| `test` | fakes | libs |',
    '',
    '## Next',
    '| `libs/zzz` | not in the section | a |',
  ].join('\n');
  const manifests = new Map<string, Manifest>([
    ['libs/a', { name: '@conveyor/a', dependencies: { zod: '4' } }],
    ['libs/b', { name: '@conveyor/b', dependencies: { '@conveyor/a': '0.1.0', '@conveyor/d': '0.1.0' } }],
    ['libs/platforms/r', { name: '@conveyor/platforms', dependencies: { '@conveyor/a': '0.1.0' } }],
    ['services/s', { name: '@conveyor/s', dependencies: {} }],
  ]);
  assert.deepEqual(packageTableProblems(doc, manifests), [
    'docs/ARCHITECTURE.md package table, row `libs/b`: leaves out d, which libs/b/package.json depends on',
    'docs/ARCHITECTURE.md package table, row `libs/b`: names c, which libs/b/package.json does not depend on',
    'docs/ARCHITECTURE.md package table, row `libs/platforms/r`: says it is @conveyor/reg, its package.json names @conveyor/platforms',
    'docs/ARCHITECTURE.md package table: no row for `services/s` (@conveyor/s)',
  ]);
});
