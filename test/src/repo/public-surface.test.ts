import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository: this file runs from test/dist/repo. */
const root = fileURLToPath(new URL('../../../', import.meta.url));

/** Every package folder with a main entry of its own (libs, libs/platforms, apps, examples). */
function mainEntries(): string[] {
  const dirs = ['libs', 'libs/platforms', 'apps', 'examples'].flatMap((top) =>
    readdirSync(path.join(root, top), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => path.join(top, e.name)),
  );
  return dirs.map((d) => path.join(d, 'src', 'index.ts')).filter((f) => existsSync(path.join(root, f)));
}

/** The lines of a main entry that hand out a whole module (`export * from`), as `file:line: text`. */
export function wholeModuleExports(file: string, text: string): string[] {
  return text.split('\n').flatMap((line, i) => (/^\s*export\s+\*\s+from\s/.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : []));
}

test('every package names what its main entry offers; none hands out a whole module', () => {
  const entries = mainEntries();
  assert.ok(entries.length >= 30, `found only ${entries.length} main entries`);
  const found = entries.flatMap((f) => wholeModuleExports(f, readFileSync(path.join(root, f), 'utf8')));
  assert.deepEqual(found, [], `name the exports instead:\n${found.join('\n')}`);
});

test('the check names a whole-module export and lets a namespace or a named export through', () => {
  const text = "export { a } from './a.js';\nexport * as Api from './api.js';\nexport * from './b.js';\n";
  assert.deepEqual(wholeModuleExports('libs/x/src/index.ts', text), ["libs/x/src/index.ts:3: export * from './b.js';"]);
});
