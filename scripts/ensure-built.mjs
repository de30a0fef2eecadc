// Brings a checkout to a runnable state: installs dependencies when missing, generates the Prisma
// client when the schema changed, and builds incrementally. Safe to run every time.
import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const run = (cmd, args, env = {}) =>
  execFileSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });

export function ensureBuilt() {
  if (!existsSync(path.join(root, 'node_modules', '.package-lock.json'))) {
    console.error('[setup] node_modules missing: npm ci');
    run('npm', ['ci', '--no-audit', '--no-fund']);
  }
  const schema = path.join(root, 'prisma', 'schema.prisma');
  const generated = path.join(root, 'libs', 'persistence', 'src', 'generated', 'prisma', 'client.ts');
  if (!existsSync(generated) || statSync(generated).mtimeMs < statSync(schema).mtimeMs) {
    console.error('[setup] generating the Prisma client');
    run('npm', ['run', 'generate', '--silent']);
  }
  run('npx', ['tsc', '-b']);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) ensureBuilt();
