import { test } from 'node:test';
import assert from 'node:assert/strict';
import JSZip from 'jszip';
import { parseSkillMd, readSkillZip, skillFromFiles, SkillFormatError, SKILL_LIMITS } from './skills.js';
import { readArchiveFiles } from './archive.js';

const SKILL_MD = '---\nname: csv-tools\ndescription: Reads and sums CSV files.\n---\n# CSV tools\nRun sum.py.\n';

async function zipOf(entries: Array<[string, string | Buffer, JSZip.JSZipFileOptions?]>): Promise<Buffer> {
  const zip = new JSZip();
  for (const [name, data, options] of entries) zip.file(name, data, options);
  return zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE', platform: 'UNIX' });
}

const code = (c: string) => (err: unknown) => err instanceof SkillFormatError && err.code === c;

test('SKILL.md: front matter gives name and description, the rest is the instructions', () => {
  assert.deepEqual(parseSkillMd(SKILL_MD), { name: 'csv-tools', description: 'Reads and sums CSV files.', instructions: '# CSV tools\nRun sum.py.' });
  assert.equal(parseSkillMd('---\ndescription: d\n---\nx', 'from-folder').name, 'from-folder');
  assert.throws(() => parseSkillMd('# no front matter'), code('bad_front_matter'));
  assert.throws(() => parseSkillMd('---\nname: Bad Name\ndescription: d\n---\n'), code('bad_name'));
  assert.throws(() => parseSkillMd('---\nname: ok\n---\n'), code('bad_description'));
  assert.throws(() => parseSkillMd('---\nname: [unclosed\n---\n'), code('bad_front_matter'));
});

test('a zip of the skill folder installs with its files; the top folder is taken off', async () => {
  const files = await readSkillZip(await zipOf([['csv-tools/SKILL.md', SKILL_MD], ['csv-tools/scripts/sum.py', 'print(1)']]));
  const skill = await skillFromFiles(files);
  assert.equal(skill.name, 'csv-tools');
  assert.equal(skill.files, 2);
  const packed = await readArchiveFiles(skill.archive, '', { maxBytes: 1 << 20, maxFiles: 10 });
  assert.deepEqual([...packed.keys()].sort(), ['SKILL.md', 'scripts/sum.py']);
  assert.equal(packed.get('scripts/sum.py')!.toString(), 'print(1)');
});

test('path traversal and absolute paths in a zip are refused', async () => {
  // JSZip normalises names on write, so the hostile names are written into the central directory by hand.
  const evil = (await zipOf([['SKILL.md', SKILL_MD], ['aa/evil.sh', 'x']])).toString('latin1').replaceAll('aa/evil.sh', '../evil.sh');
  await assert.rejects(readSkillZip(Buffer.from(evil, 'latin1')), code('unsafe_path'));
  const absolute = (await zipOf([['SKILL.md', SKILL_MD], ['/tmp/x.sh', 'x']]));
  await assert.rejects(readSkillZip(absolute), (e: unknown) => e instanceof SkillFormatError && (e.code === 'unsafe_path'));
});

test('a link in a zip is refused', async () => {
  const zip = await zipOf([['SKILL.md', SKILL_MD], ['passwd', '/etc/passwd', { unixPermissions: 0o120777 }]]);
  await assert.rejects(readSkillZip(zip), code('link'));
});

test('a zip bomb stops at the byte bound, whatever the headers say', async () => {
  const zip = await zipOf([['SKILL.md', SKILL_MD], ['zeros.bin', Buffer.alloc(SKILL_LIMITS.bytes + 1024 * 1024)]]);
  assert.ok(zip.byteLength < 200_000, `the bomb compresses well (${zip.byteLength} bytes)`);
  const before = process.memoryUsage().rss;
  await assert.rejects(readSkillZip(zip), code('too_large'));
  assert.ok(process.memoryUsage().rss - before < 256 * 1024 * 1024);
});

test('no SKILL.md, not a zip, too many files, too large an upload', async () => {
  await assert.rejects(async () => skillFromFiles(await readSkillZip(await zipOf([['readme.txt', 'x']]))), code('no_skill_md'));
  await assert.rejects(readSkillZip(Buffer.from('not a zip at all')), code('not_a_zip'));
  const many = await zipOf(Array.from({ length: SKILL_LIMITS.files + 1 }, (_, i) => [`f${i}.txt`, 'x'] as [string, string]));
  await assert.rejects(readSkillZip(many), code('too_many_files'));
  await assert.rejects(readSkillZip(Buffer.alloc(SKILL_LIMITS.uploadBytes + 1)), code('too_large'));
});
