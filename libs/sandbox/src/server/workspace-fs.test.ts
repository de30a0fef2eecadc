import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { measureWorkspace, WorkspaceFs, WorkspaceFsError } from './workspace-fs.js';

let root: string;
let ws: string;
let skill: string;
let files: WorkspaceFs;

before(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'ws-fs-'));
  ws = path.join(root, 'ws');
  skill = path.join(root, 'skill');
  await mkdir(ws);
  await mkdir(skill);
  await writeFile(path.join(skill, 'SKILL.md'), 'skill text');
  await writeFile(path.join(root, 'secret.txt'), 'host secret');
  files = new WorkspaceFs(ws, new Map([['demo', skill]]));
});
after(() => rm(root, { recursive: true, force: true }));

const refused = (e: unknown) => e instanceof WorkspaceFsError && e.code === 'refused';

test('paths resolve under /workspace; relative ones from there; others are refused', async () => {
  assert.match(await files.write('/workspace/a/b.txt', 'one\ntwo\nthree\n', 'overwrite'), /wrote 14 bytes/);
  assert.equal(await files.read('a/b.txt', 1, 2000), 'one\ntwo\nthree');
  assert.equal(await files.read('/workspace/a/b.txt', 2, 1), 'two\n[lines 2-2 of 3; read again with offset 3 for more]');
  await assert.rejects(files.read('/etc/passwd', 1, 10), refused);
  await assert.rejects(files.read('/workspace/../secret.txt', 1, 10), refused);
  await assert.rejects(files.read('../secret.txt', 1, 10), refused);
});

test('links are never followed, whatever they point at', async () => {
  await symlink(path.join(root, 'secret.txt'), path.join(ws, 'link.txt'));
  await symlink(root, path.join(ws, 'up'));
  await assert.rejects(files.read('/workspace/link.txt', 1, 10), refused);
  await assert.rejects(files.read('/workspace/up/secret.txt', 1, 10), refused);
  await assert.rejects(files.write('/workspace/up/owned.txt', 'x', 'overwrite'), refused);
  await assert.rejects(files.write('/workspace/link.txt', 'x', 'overwrite'), refused);
  assert.equal(await readFile(path.join(root, 'secret.txt'), 'utf8'), 'host secret');
  await assert.rejects(readFile(path.join(root, 'owned.txt')), /ENOENT/);
  assert.doesNotMatch(await files.grep('secret', '/workspace', undefined), /host secret/);
});

test('skills are readable and never writable', async () => {
  assert.equal(await files.read('/skills/demo/SKILL.md', 1, 10), 'skill text');
  await assert.rejects(files.write('/skills/demo/SKILL.md', 'x', 'overwrite'), refused);
  await assert.rejects(files.read('/skills/other/SKILL.md', 1, 10), refused);
});

test('edit replaces exactly one occurrence', async () => {
  await files.write('e.txt', 'a b a', 'overwrite');
  await assert.rejects(files.edit('e.txt', 'a', 'c'), /occurs more than once/);
  await assert.rejects(files.edit('e.txt', 'zzz', 'c'), /was not found/);
  await files.edit('e.txt', 'b', 'B');
  assert.equal(await files.read('e.txt', 1, 10), 'a B a');
});

test('glob and grep are bounded and skip noise folders; take empties the outbox', async () => {
  await mkdir(path.join(ws, 'node_modules'), { recursive: true });
  await writeFile(path.join(ws, 'node_modules', 'x.txt'), 'needle');
  await files.write('deep/n.txt', 'a needle here', 'overwrite');
  assert.equal(await files.grep('need+le', '/workspace', '*.txt'), '/workspace/deep/n.txt:1: a needle here');
  assert.match(await files.glob('**/n.txt', '/workspace'), /\/workspace\/deep\/n.txt/);
  await assert.rejects(files.grep('(', '/workspace', undefined), /not a valid regular expression/);
  await files.put([{ path: '/workspace/outbox/q1/r.txt', base64: Buffer.from('report').toString('base64') }]);
  const taken = await files.take('/workspace/outbox/q1');
  assert.deepEqual(taken.files.map((f) => [f.path, Buffer.from(f.base64, 'base64').toString()]), [['r.txt', 'report']]);
  assert.deepEqual((await files.take('/workspace/outbox/q1')).files, []);
  assert.deepEqual((await files.take('/workspace/outbox/none')).files, []);
});

test('the size walk sees a change and counts bytes without following links', async () => {
  const before = await measureWorkspace(ws);
  await writeFile(path.join(ws, 'new.bin'), Buffer.alloc(1000));
  const after = await measureWorkspace(ws);
  assert.notEqual(after.fingerprint, before.fingerprint);
  assert.equal(after.bytes - before.bytes, 1000);
  assert.equal((await measureWorkspace(ws)).fingerprint, after.fingerprint);
});
