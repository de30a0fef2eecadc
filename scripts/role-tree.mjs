// What one role's image holds: the role's workspace, and the workspaces and npm packages its
// production dependencies reach (dependencies, optional and peer dependencies, followed through the
// lockfile's node_modules layout as Node.js resolves them). Each workspace contributes its
// package.json, its compiled dist without the unit tests, and its runtime assets (Lua scripts, the
// console's files); nothing else: no TypeScript sources, tests, benchmarks or other roles' packages.
//
//   node scripts/role-tree.mjs <role> <out-dir> [--link]   assemble one tree (--link: hard links)
//   node scripts/role-tree.mjs --sizes                     every role's size, and the whole tree's
//
// The Dockerfile runs it once per role; the deploy conformance suite runs the same script to start
// each role from exactly that tree.
import { existsSync, linkSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, realpathSync, copyFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Each role: the workspaces its process starts from, and files of the repository root it reads. */
export const ROLES = {
  ingress: { workspaces: ['services/ingress'], rootFiles: [] },
  orchestrator: { workspaces: ['services/orchestrator'], rootFiles: [] },
  runner: { workspaces: ['services/runner'], rootFiles: [] },
  dispatcher: { workspaces: ['services/dispatcher'], rootFiles: [] },
  gateway: { workspaces: ['services/gateway'], rootFiles: [] },
  admin: { workspaces: ['services/admin'], rootFiles: [] },
  sandbox: { workspaces: ['services/sandbox'], rootFiles: [] },
  migrate: { workspaces: ['libs/config'], rootFiles: ['prisma/migrations'] },
};

/** The directories of a workspace the running code reads besides its package.json. */
const RUNTIME_DIRS = ['dist', 'lua', 'web'];
/**
 * In a native addon's package, what node-gyp left behind besides the addon itself: object files,
 * makefiles and the vendored C++ sources it compiled.
 */
function addonBuildLeftover(file, packageDir) {
  if (!existsSync(path.join(packageDir, 'binding.gyp'))) return false;
  const rel = path.relative(packageDir, file);
  if (rel === 'vendor' || rel.startsWith(`vendor${path.sep}`)) return true;
  if (!rel.startsWith(`build${path.sep}`)) return false;
  return !(rel === path.join('build', 'Release') || (rel.startsWith(path.join('build', 'Release') + path.sep) && rel.endsWith('.node') && !rel.includes('obj.target')));
}

/**
 * Compiled unit tests and the helpers only tests import (a package's `testing` entry, `test-*.js`),
 * type declarations and build bookkeeping, which sit in dist beside the code.
 */
const NOT_RUNTIME = /(\.test\.js(\.map)?|\.d\.ts(\.map)?|\.tsbuildinfo|[\\/]dist[\\/](testing([\\/].*)?|testing\.js(\.map)?|test-[^\\/]*\.js(\.map)?))$/;

function readJson(file) {
  return JSON.parse(readFileSync(file, 'utf8'));
}

/** The package directory `name` resolves to from `fromDir`, as Node.js looks it up (node_modules upwards). */
function resolvePackage(name, fromDir) {
  for (let dir = fromDir; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', name);
    if (existsSync(path.join(candidate, 'package.json'))) return candidate;
    if (dir === root || dir === path.dirname(dir)) return undefined;
  }
}

/**
 * The role's closure: workspace directories (repository-relative) and package directories under some
 * node_modules (repository-relative, as installed), plus the workspace links in node_modules.
 */
export function closure(role) {
  const spec = ROLES[role];
  if (!spec) throw new Error(`unknown role ${role}; one of ${Object.keys(ROLES).join(', ')}`);
  const workspaces = new Set();
  const packages = new Set();
  const links = new Set();
  const queue = spec.workspaces.map((w) => path.join(root, w));
  const seen = new Set();
  while (queue.length) {
    const dir = queue.shift();
    const real = realpathSync(dir);
    if (seen.has(real)) continue;
    seen.add(real);
    const rel = path.relative(root, real);
    if (rel.startsWith('node_modules') || rel.includes(`${path.sep}node_modules${path.sep}`)) packages.add(rel);
    else workspaces.add(rel);
    const pkg = readJson(path.join(real, 'package.json'));
    // Optional peers (a CLI or compiler a library can use when present) are the application's choice, not a need.
    const peers = Object.keys(pkg.peerDependencies ?? {}).filter((n) => !pkg.peerDependenciesMeta?.[n]?.optional);
    const optional = new Set([...Object.keys(pkg.optionalDependencies ?? {}), ...peers]);
    for (const name of new Set([...Object.keys(pkg.dependencies ?? {}), ...optional])) {
      const found = resolvePackage(name, real);
      if (!found) {
        // Optional (another platform's binary) or a peer nobody installed: not part of this tree.
        if (optional.has(name)) continue;
        throw new Error(`${rel}: dependency ${name} is not installed`);
      }
      if (lstatSync(found).isSymbolicLink()) links.add(path.relative(root, found));
      queue.push(found);
    }
  }
  return { workspaces: [...workspaces].sort(), packages: [...packages].sort(), links: [...links].sort(), rootFiles: spec.rootFiles };
}

/** Copies (or hard-links) a file tree; nested node_modules are left out (the closure lists what is needed). */
function place(src, dest, link, skip = () => false) {
  const st = lstatSync(src);
  if (st.isSymbolicLink()) {
    mkdirSync(path.dirname(dest), { recursive: true });
    if (!existsSync(dest)) symlinkSync(readlinkSync(src), dest);
    return;
  }
  if (st.isDirectory()) {
    mkdirSync(dest, { recursive: true });
    for (const name of readdirSync(src)) {
      const child = path.join(src, name);
      if (skip(child, name)) continue;
      place(child, path.join(dest, name), link, skip);
    }
    return;
  }
  mkdirSync(path.dirname(dest), { recursive: true });
  if (existsSync(dest)) return;
  if (!link) return copyFileSync(src, dest);
  try {
    linkSync(src, dest);
  } catch (err) {
    // Another file system: hard links cannot cross it.
    if (err.code !== 'EXDEV') throw err;
    copyFileSync(src, dest);
  }
}

export function assemble(role, out, { link = false } = {}) {
  const c = closure(role);
  mkdirSync(out, { recursive: true });
  place(path.join(root, 'package.json'), path.join(out, 'package.json'), link);
  for (const ws of c.workspaces) {
    place(path.join(root, ws, 'package.json'), path.join(out, ws, 'package.json'), link);
    for (const d of RUNTIME_DIRS) {
      const from = path.join(root, ws, d);
      if (existsSync(from)) place(from, path.join(out, ws, d), link, (p) => NOT_RUNTIME.test(p));
    }
  }
  for (const p of c.packages) place(path.join(root, p), path.join(out, p), link, (file, name) => name === 'node_modules' || addonBuildLeftover(file, path.join(root, p)));
  for (const l of c.links) place(path.join(root, l), path.join(out, l), link);
  for (const f of c.rootFiles) place(path.join(root, f), path.join(out, f), link);
  return c;
}

function sizeOf(dir, skip = () => false) {
  let bytes = 0;
  let files = 0;
  const walk = (p) => {
    const st = lstatSync(p);
    if (st.isSymbolicLink()) return;
    if (st.isDirectory()) {
      for (const n of readdirSync(p)) if (!skip(path.join(p, n), n)) walk(path.join(p, n));
      return;
    }
    bytes += st.size;
    files++;
  };
  if (existsSync(dir)) walk(dir);
  return { bytes, files };
}

/** A role's tree size from its closure, without assembling it. */
export function treeSize(role) {
  const c = closure(role);
  let bytes = 0;
  let files = 0;
  const add = (s) => {
    bytes += s.bytes;
    files += s.files;
  };
  for (const ws of c.workspaces) {
    add(sizeOf(path.join(root, ws, 'package.json')));
    for (const d of RUNTIME_DIRS) add(sizeOf(path.join(root, ws, d), (p) => NOT_RUNTIME.test(p)));
  }
  for (const p of c.packages) add(sizeOf(path.join(root, p), (file, n) => n === 'node_modules' || addonBuildLeftover(file, path.join(root, p))));
  for (const f of c.rootFiles) add(sizeOf(path.join(root, f)));
  return { bytes, files, packages: c.packages.length, workspaces: c.workspaces.length };
}

/**
 * For comparison, what an image holds when it carries every workspace: every library and service
 * tree whole (sources, tests and compiled output), the console's build, and the production packages of
 * all of them as installed.
 */
export function wholeTreeSize() {
  const all = readJson(path.join(root, 'package.json')).workspaces.filter((w) => /^(libs|services)\//.test(w) || w === 'apps/console');
  const packages = new Set();
  for (const w of all) {
    ROLES.__all = { workspaces: [w], rootFiles: [] };
    for (const p of closure('__all').packages) packages.add(p);
  }
  delete ROLES.__all;
  let bytes = 0;
  let files = 0;
  const add = (x) => {
    bytes += x.bytes;
    files += x.files;
  };
  for (const p of packages) add(sizeOf(path.join(root, p), (_f, n) => n === 'node_modules'));
  add(sizeOf(path.join(root, 'libs')));
  add(sizeOf(path.join(root, 'services')));
  for (const f of ['package.json', 'dist', 'web']) add(sizeOf(path.join(root, 'apps/console', f)));
  add(sizeOf(path.join(root, 'prisma/migrations')));
  return { bytes, files, packages: packages.size };
}

const mib = (b) => `${(b / 1048576).toFixed(1)} MiB`;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  if (args[0] === '--sizes') {
    const whole = wholeTreeSize();
    console.log(`${'every role'.padEnd(13)} ${mib(whole.bytes).padStart(10)}  ${String(whole.files).padStart(6)} files  (all workspaces whole, ${whole.packages} packages)`);
    for (const role of Object.keys(ROLES)) {
      const s = treeSize(role);
      console.log(`${role.padEnd(13)} ${mib(s.bytes).padStart(10)}  ${String(s.files).padStart(6)} files  ${s.workspaces} workspaces, ${s.packages} packages`);
    }
  } else if (args.length >= 2) {
    const c = assemble(args[0], path.resolve(args[1]), { link: args.includes('--link') });
    console.log(`${args[0]}: ${c.workspaces.length} workspaces, ${c.packages.length} packages → ${args[1]}`);
  } else {
    console.error('usage: role-tree.mjs <role> <out-dir> [--link] | --sizes');
    process.exit(2);
  }
}
