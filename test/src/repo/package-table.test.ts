import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../harness/services.js';

interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

/** Every workspace package with its folder, read from the root package.json's workspaces. */
function workspacePackages(): Map<string, { dir: string; manifest: Manifest }> {
  const root = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { workspaces: string[] };
  const out = new Map<string, { dir: string; manifest: Manifest }>();
  for (const pattern of root.workspaces) {
    const dirs = pattern.endsWith('/*')
      ? readdirSync(path.join(repoRoot, pattern.slice(0, -2))).map((d) => `${pattern.slice(0, -2)}/${d}`)
      : [pattern];
    for (const dir of dirs) {
      const file = path.join(repoRoot, dir, 'package.json');
      try {
        if (!statSync(file).isFile()) continue;
      } catch {
        continue;
      }
      const manifest = JSON.parse(readFileSync(file, 'utf8')) as Manifest;
      out.set(dir, { dir, manifest });
    }
  }
  return out;
}

const SCOPE = '@conveyor/';

/**
 * docs/ARCHITECTURE.md's package table names, for each package, the Conveyor packages it depends on
 * (before any `;`), by the short name in its package.json (`@conveyor/<short>`): it must match the
 * manifests, so a reader of the table knows the layering as it is.
 */
test('the architecture document\'s package table names each package\'s Conveyor dependencies as its package.json does', () => {
  const doc = readFileSync(path.join(repoRoot, 'docs/ARCHITECTURE.md'), 'utf8');
  const rows = [...doc.matchAll(/^\| `([a-z0-9/-]+)`(?: \(`@conveyor\/[a-z-]+`\))? \| .* \| ([^|]*) \|$/gm)].map((m) => ({ dir: m[1], column: m[2] }));
  const packages = workspacePackages();
  const shortOf = new Map([...packages.values()].map((p) => [p.manifest.name, p.manifest.name.slice(SCOPE.length)]));
  const documented = new Set<string>();
  const problems: string[] = [];
  for (const { dir, column } of rows) {
    const pkg = packages.get(dir);
    // The test and bench packages depend on whatever they exercise; the table says so in words.
    if (!pkg || !/^(libs|apps|examples)\//.test(dir)) continue;
    documented.add(dir);
    const named = new Set(column.split(';')[0].replace(/\([^)]*\)/g, '').split(',').map((t) => t.trim()).filter((t) => t !== '—' && t !== ''));
    const deps = { ...pkg.manifest.dependencies, ...pkg.manifest.devDependencies };
    const actual = new Set(Object.keys(deps).filter((d) => d.startsWith(SCOPE)).map((d) => shortOf.get(d) ?? d.slice(SCOPE.length)));
    const missing = [...actual].filter((d) => !named.has(d));
    const extra = [...named].filter((d) => !actual.has(d));
    if (missing.length || extra.length) problems.push(`${dir}: the table ${missing.length ? `leaves out ${missing.join(', ')}` : ''}${missing.length && extra.length ? ' and ' : ''}${extra.length ? `names ${extra.join(', ')}, which it does not depend on` : ''}`);
  }
  const libraries = [...packages.keys()].filter((d) => d.startsWith('libs/') || d.startsWith('apps/'));
  for (const dir of libraries) if (!documented.has(dir)) problems.push(`${dir}: no row in the package table`);
  assert.deepEqual(problems, []);
  assert.ok(documented.size >= 20, `only ${documented.size} rows were read: has the table's format changed?`);
});
