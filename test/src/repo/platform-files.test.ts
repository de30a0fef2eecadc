import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository: this file runs from test/dist/repo. */
const root = fileURLToPath(new URL('../../../', import.meta.url));
const platformsDir = path.join(root, 'libs/platforms');

/** What a file is, by what it declares, and the one name a file of that kind has in every platform package. */
const ROLES: Array<{ role: string; file: string; declares: RegExp }> = [
  { role: 'the inbound check', file: 'verify.ts', declares: /^export (async )?function verify\w*\(/m },
  { role: 'the outbound adapter', file: 'adapter.ts', declares: /^export class \w+ implements PlatformAdapter\b/m },
  { role: 'the held connection', file: 'connection.ts', declares: /^export const \w+: PlatformConnection</m },
  { role: 'the platform definition', file: 'platform.ts', declares: /^export const \w+: Platform</m },
];

/** Names each package once chose for itself; a reader looks for the role's name instead. */
const RETIRED = ['signature.ts', 'signing.ts', 'crypto.ts', 'events.ts', 'message.ts', 'update.ts', 'inbound.ts', 'inbound-check.ts', 'kf.ts'];

function platformPackages(): string[] {
  return readdirSync(platformsDir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && e.name !== 'registry' && existsSync(path.join(platformsDir, e.name, 'package.json')))
    .map((e) => e.name);
}

function sources(pkg: string): Map<string, string> {
  const dir = path.join(platformsDir, pkg, 'src');
  return new Map(readdirSync(dir).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts')).map((f) => [f, readFileSync(path.join(dir, f), 'utf8')]));
}

/** Every misplaced declaration and retired file name of one package, as sentences naming the file. */
function misnamedFiles(pkg: string, files: Map<string, string>): string[] {
  const out: string[] = [];
  for (const name of files.keys()) {
    if (RETIRED.includes(name)) out.push(`${pkg}/src/${name}: a retired name; name the file by its role (verify, parse, convert, adapter, connection)`);
  }
  for (const { role, file, declares } of ROLES) {
    for (const [name, text] of files) {
      if (name !== file && declares.test(text)) out.push(`${pkg}/src/${name} declares ${role}, which lives in ${file}`);
    }
  }
  if (!files.has('platform.ts')) out.push(`${pkg}/src/platform.ts is missing: every platform package defines its Platform there`);
  if (!files.has('parse.ts') && !files.has('convert.ts')) out.push(`${pkg}/src has neither parse.ts nor convert.ts: where does an inbound event become a message?`);
  return out;
}

test('every platform package names its files by role: verify, parse or convert, adapter, connection, platform', () => {
  const packages = platformPackages();
  assert.ok(packages.length >= 17, `found ${packages.length} platform packages`);
  const problems = packages.flatMap((pkg) => misnamedFiles(pkg, sources(pkg)));
  assert.deepEqual(problems, []);
});

test('the file-name check names the file and the role it got wrong', () => {
  const files = new Map([
    ['signature.ts', 'export function verifyThing(body: Buffer): boolean { return true; }'],
    ['platform.ts', 'export const thingPlatform: Platform<ThingConfig> = {};'],
    ['parse.ts', 'export class ThingAdapter implements PlatformAdapter {}'],
  ]);
  assert.deepEqual(misnamedFiles('thing', files), [
    'thing/src/signature.ts: a retired name; name the file by its role (verify, parse, convert, adapter, connection)',
    'thing/src/signature.ts declares the inbound check, which lives in verify.ts',
    'thing/src/parse.ts declares the outbound adapter, which lives in adapter.ts',
  ]);
});
