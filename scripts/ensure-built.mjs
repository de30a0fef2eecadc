// Brings a checkout to a runnable state: installs dependencies when missing, generates the Prisma
// client when the schema changed, and builds incrementally. Safe to run every time.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
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
  // The console's static files (vite); rebuilt when a source is newer than the last build, its own or
  // a library's it bundles (the API's schemas, the pipeline's defaults).
  const consoleDir = path.join(root, 'apps', 'console');
  const built = path.join(consoleDir, 'web', 'index.html');
  const bundled = ['contracts', 'pipeline'].map((lib) => path.join(root, 'libs', lib, 'dist'));
  const sources = [path.join(consoleDir, 'index.html'), path.join(consoleDir, 'vite.config.mjs'), ...files(path.join(consoleDir, 'src')), ...bundled.flatMap(files)];
  if (!existsSync(built) || sources.some((f) => statSync(f).mtimeMs > statSync(built).mtimeMs)) {
    console.error('[setup] building the web console');
    run('npm', ['run', 'build', '--silent', '-w', 'apps/console']);
  }
}

function files(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) ensureBuilt();
