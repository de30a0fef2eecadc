import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createPrismaClient, type PrismaClient } from '@conveyor/persistence';
import { createTempDatabase, type TempDatabase } from '@conveyor/persistence/testing';
import { packFiles, readArchiveFiles } from '@conveyor/sandbox/skills';
import { applyConfigFile, describeChanges, FILE_MANAGED, syncConfigFile } from './apply.js';
import { configChangesOf } from './cli/announce.js';
import { ConfigFileError } from './errors.js';
import { loadConfigFile, parseConfigText } from './load.js';

let db: TempDatabase;
let prisma: PrismaClient;
let dir: string;

before(async () => {
  db = await createTempDatabase();
  prisma = createPrismaClient(db.url);
  dir = mkdtempSync(path.join(tmpdir(), 'conveyor-skills-'));
});

after(async () => {
  rmSync(dir, { recursive: true, force: true });
  await prisma?.$disconnect();
  await db?.drop();
});

const skillMd = (name: string, description: string, body = '# Steps\nRun the script.') => `---\nname: ${name}\ndescription: ${description}\n---\n${body}\n`;

/** A skill folder under the test's directory: relative path → content. */
function folder(rel: string, files: Record<string, string>): string {
  const root = path.join(dir, rel);
  rmSync(root, { recursive: true, force: true });
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    writeFileSync(path.join(root, name), content);
  }
  return root;
}

function configFile(name: string, yaml: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, yaml);
  return file;
}

const row = (name: string) => prisma.skill.findUnique({ where: { name }, select: { name: true, description: true, instructions: true, revision: true, managedBy: true, files: true, archive: true } });

test('a skill folder named in the file is installed as the file\'s; the same files again change nothing; an edit is a new revision', async () => {
  folder('skills/csv-tools', { 'SKILL.md': skillMd('csv-tools', 'Sums CSV columns.'), 'scripts/sum.py': 'print(1)\n' });
  const file = configFile('one.yaml', 'skills:\n  - path: ./skills/csv-tools\n');
  const config = await loadConfigFile(file);
  assert.deepEqual(config.skills, [{ path: path.join(dir, 'skills/csv-tools') }], 'the path is relative to the file');

  const first = await applyConfigFile(prisma, config);
  assert.deepEqual(first.skills, { created: ['csv-tools'], updated: [], unchanged: [], retired: [], kept: [], notManaged: [] });
  const stored = await row('csv-tools');
  assert.deepEqual([stored?.description, stored?.instructions, stored?.revision, stored?.managedBy, stored?.files], ['Sums CSV columns.', '# Steps\nRun the script.', 1, FILE_MANAGED, 2]);
  const files = await readArchiveFiles(Buffer.from(stored!.archive), '', { maxBytes: 1 << 20, maxFiles: 10 });
  assert.deepEqual([...files.keys()].sort(), ['SKILL.md', 'scripts/sum.py']);
  assert.deepEqual(describeChanges(first), ['skills: create csv-tools']);
  assert.deepEqual((await configChangesOf(prisma, first)).filter((e) => e.kind === 'skill'), [{ version: 1, kind: 'skill', id: 'csv-tools', revision: 1 }]);

  // Packed again (a tar's bytes differ with every packing), the same files are the same skill.
  const again = await applyConfigFile(prisma, await loadConfigFile(file));
  assert.deepEqual(again.skills.unchanged, ['csv-tools']);
  assert.equal((await row('csv-tools'))?.revision, 1);
  assert.deepEqual(await configChangesOf(prisma, again), [], 'nothing changed, nothing announced');

  writeFileSync(path.join(dir, 'skills/csv-tools/scripts/sum.py'), 'print(2)\n');
  const edited = await applyConfigFile(prisma, await loadConfigFile(file));
  assert.deepEqual(edited.skills.updated, ['csv-tools']);
  assert.equal((await row('csv-tools'))?.revision, 2, 'a script changed: sandboxes unpack the new revision');
  assert.deepEqual((await configChangesOf(prisma, edited)).filter((e) => e.kind === 'skill'), [{ version: 1, kind: 'skill', id: 'csv-tools', revision: 2 }]);
});

test('a skill the file no longer lists is deleted if the file installed it; one installed in the console is left, or taken over when named', async () => {
  const archive = await packFiles(new Map([['SKILL.md', Buffer.from(skillMd('uploaded', 'Came from the console.'))]]));
  await prisma.skill.create({ data: { name: 'uploaded', description: 'Came from the console.', instructions: '# Steps', archive: new Uint8Array(archive), files: 1, bytes: 10, managedBy: 'console' } });
  await prisma.skill.create({ data: { name: 'taken', description: 'Console copy.', instructions: '', archive: new Uint8Array(archive), files: 1, bytes: 10, managedBy: 'console' } });
  folder('skills/taken', { 'SKILL.md': skillMd('taken', 'The file\'s copy.') });
  const file = configFile('two.yaml', 'skills:\n  - path: skills/taken\n');

  const plan = await syncConfigFile(prisma, file, { dryRun: true });
  assert.deepEqual(plan.summary.skills, { created: [], updated: ['taken'], unchanged: [], retired: ['csv-tools'], kept: [], notManaged: ['uploaded'] });
  assert.ok(await row('csv-tools'), 'a dry run deletes nothing');

  const { summary } = await syncConfigFile(prisma, file);
  assert.deepEqual([summary.skills.updated, summary.skills.retired, summary.skills.notManaged], [['taken'], ['csv-tools'], ['uploaded']]);
  assert.equal(await row('csv-tools'), null, 'dropped from the file: deleted');
  assert.equal((await row('uploaded'))?.managedBy, 'console', 'never the file\'s: left as it is');
  const taken = await row('taken');
  assert.deepEqual([taken?.managedBy, taken?.description, taken?.revision], [FILE_MANAGED, 'The file\'s copy.', 2]);
  assert.match(describeChanges(summary).join('\n'), /skills: update taken; deleted \(no longer in the file\) csv-tools/);
  const announced = (await configChangesOf(prisma, summary)).filter((e) => e.kind === 'skill').map((e) => `${e.id} ${e.revision}`).sort();
  assert.deepEqual(announced, ['csv-tools 0', 'taken 2'], 'a deleted skill is announced with revision 0');

  const empty = configFile('three.yaml', 'models: []\n');
  assert.deepEqual((await syncConfigFile(prisma, empty)).summary.skills.retired, ['taken']);
  assert.ok(await row('uploaded'));
});

test('a folder that is no skill stops the apply, naming the entry; nothing is written', async () => {
  const before = await prisma.skill.count();
  folder('bad/no-md', { 'README.md': 'no skill here' });
  folder('bad/bad-name', { 'SKILL.md': skillMd('Bad Name', 'x') });
  folder('bad/linked', { 'SKILL.md': skillMd('linked', 'Has a link.') });
  symlinkSync('/etc/passwd', path.join(dir, 'bad/linked/passwd'));
  folder('bad/good', { 'SKILL.md': skillMd('good', 'Fine on its own.') });
  folder('bad/twin', { 'SKILL.md': skillMd('good', 'Same name, other folder.') });
  const file = configFile('bad.yaml', `
skills:
  - path: bad/missing
  - path: bad/no-md
  - path: bad/bad-name
  - path: bad/linked
  - path: bad/good
  - path: bad/twin
`);
  await assert.rejects(applyConfigFile(prisma, await loadConfigFile(file)), (err: unknown) => {
    assert.ok(err instanceof ConfigFileError, String(err));
    const byPath = new Map(err.issues.map((i) => [i.path, i.message]));
    assert.match(byPath.get('skills[0].path') ?? '', /does not exist/);
    assert.match(byPath.get('skills[1].path') ?? '', /SKILL\.md/);
    assert.match(byPath.get('skills[2].path') ?? '', /name/);
    assert.match(byPath.get('skills[3].path') ?? '', /passwd.*is a link/);
    assert.match(byPath.get('skills[5].path') ?? '', /skill "good" is also skills\[4\]/);
    assert.equal(byPath.has('skills[4].path'), false);
    return true;
  });
  assert.equal(await prisma.skill.count(), before, 'nothing stored');
  assert.throws(() => parseConfigText('skills:\n  - {path: a}\n  - {path: ./a}\n', path.join(dir, 'dup.yaml'), { env: {} }), /skills\[1\]\.path: duplicate folder/);
  assert.throws(() => parseConfigText('skills:\n  - {folder: a}\n', path.join(dir, 'typo.yaml'), { env: {} }), /skills\[0\]/);
});

test('a pipeline\'s skill binding comes from the file, or stays as stored when the file leaves it out', async () => {
  const file = configFile('bind.yaml', `
models: [{id: m, baseUrl: "http://llm/v1", model: gpt}]
pipelines:
  - id: picky
    config: {ai: {local-agent: {model: {primary: m}}}}
    extensionsPreferences: {enable_all_skills: false, skills: [csv-tools, csv-tools, taken]}
`);
  await syncConfigFile(prisma, file);
  const prefs = async () => (await prisma.pipeline.findUniqueOrThrow({ where: { id: 'picky' } })).extensionsPreferences as Record<string, unknown>;
  assert.deepEqual([(await prefs()).enable_all_skills, (await prefs()).skills], [false, ['csv-tools', 'taken']]);
  writeFileSync(file, `
models: [{id: m, baseUrl: "http://llm/v1", model: gpt}]
pipelines:
  - id: picky
    config: {ai: {local-agent: {model: {primary: m}}}}
`);
  const again = await syncConfigFile(prisma, file);
  assert.deepEqual(again.summary.pipelines.unchanged, ['picky'], 'left out: the stored binding is kept');
  assert.deepEqual([(await prefs()).enable_all_skills, (await prefs()).skills], [false, ['csv-tools', 'taken']]);
  assert.throws(() => parseConfigText('pipelines: [{id: p, extensionsPreferences: {skills: [Not_A_Skill]}}]\n', 'x.yaml', { env: {} }), /pipelines\[0\]\.extensionsPreferences\.skills\[0\]/);
});
