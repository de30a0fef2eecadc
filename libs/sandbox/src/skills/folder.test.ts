import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { readSkillFolder } from './folder.js';
import { SkillFormatError } from './skills.js';

const dir = mkdtempSync(path.join(tmpdir(), 'conveyor-skill-folder-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A folder under the test's directory: relative path → content. */
function folder(rel: string, files: Record<string, string>): string {
  const root = path.join(dir, rel);
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    writeFileSync(path.join(root, name), content);
  }
  return root;
}

const code = (c: string) => (err: unknown) => err instanceof SkillFormatError && err.code === c;

test('a folder holding the skill\'s folder is read like a zip of it; the folder\'s name stands in for a missing name', async () => {
  const skill = await readSkillFolder(folder('nested', { 'pdf-notes/SKILL.md': '---\ndescription: Reads PDFs.\n---\nSteps.\n' }));
  assert.deepEqual([skill.name, skill.description, skill.files], ['pdf-notes', 'Reads PDFs.', 1]);
  const named = await readSkillFolder(folder('from-folder', { 'SKILL.md': '---\ndescription: Named by its folder.\n---\n' }));
  assert.equal(named.name, 'from-folder');
});

test('a link in the folder, or a SKILL.md Postgres cannot store, refuses the whole folder', async () => {
  const linked = folder('linked', { 'SKILL.md': '---\nname: linked\ndescription: Has a link.\n---\n' });
  symlinkSync('/etc/passwd', path.join(linked, 'passwd'));
  await assert.rejects(readSkillFolder(linked), code('link'));
  await assert.rejects(readSkillFolder(folder('nul', { 'SKILL.md': '---\nname: nul\ndescription: Holds a NUL.\n---\nbefore\0after\n' })), code('bad_text'));
  await assert.rejects(readSkillFolder(path.join(dir, 'missing')), /does not exist/);
});
