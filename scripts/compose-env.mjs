// `npm run compose:env`: writes .env for `docker compose up` from .env.example, each `<...>` placeholder
// replaced by a random value of its own (CONVEYOR_SECRET_KEY: 32 random bytes in base64; the others a
// letter and 32 hex digits, safe in any URL). An existing .env is kept unless --force.
// `-- --out <file>` writes elsewhere (tests do).
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const outAt = args.indexOf('--out');
const out = outAt >= 0 ? path.resolve(args[outAt + 1] ?? '') : path.join(root, '.env');
if (existsSync(out) && !args.includes('--force')) {
  console.error(`conveyor: ${path.relative(process.cwd(), out) || out} exists; kept (--force replaces it)`);
  process.exit(1);
}
const filled = readFileSync(path.join(root, '.env.example'), 'utf8').split('\n').map((line) => {
  if (line.startsWith('#') || !/<[^>]*>/.test(line)) return line;
  const value = line.startsWith('CONVEYOR_SECRET_KEY=') ? randomBytes(32).toString('base64') : `n${randomBytes(16).toString('hex')}`;
  return line.replace(/<[^>]*>/, value);
});
writeFileSync(out, filled.join('\n'), { mode: 0o600 });
console.log(`conveyor: wrote ${out} with a random value for each secret; now: docker compose up`);
