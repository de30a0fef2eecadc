// Checks an npm lockfile against the repository's list of known-fixed minimum versions.
// The registry's audit endpoint is not reachable from every build host, so the list of
// fixed releases is kept in the repository and checked offline on every test run.
import { readFileSync } from 'node:fs';
import path from 'node:path';

export interface KnownFixed { minimums: Record<string, string> }

export interface LockPackage { version?: string; dependencies?: Record<string, string>; link?: boolean }
export interface Lockfile { packages: Record<string, LockPackage> }

export interface BelowMinimum { name: string; location: string; installed: string; minimum: string }
export interface SplitPin { name: string; specs: Record<string, string> }

/** Numeric major.minor.patch; a prerelease sorts below its release, as in semver. */
function parse(v: string): { nums: number[]; pre: boolean } {
  const m = /^v?(\d+)\.(\d+)\.(\d+)(-[^+]+)?/.exec(v.trim());
  if (!m) throw new Error(`not a semver version: ${v}`);
  return { nums: [Number(m[1]), Number(m[2]), Number(m[3])], pre: m[4] !== undefined };
}

export function compareVersions(a: string, b: string): number {
  const pa = parse(a);
  const pb = parse(b);
  for (let i = 0; i < 3; i++) if (pa.nums[i] !== pb.nums[i]) return pa.nums[i] - pb.nums[i];
  if (pa.pre !== pb.pre) return pa.pre ? -1 : 1;
  return 0;
}

/** The package name a lockfile location installs: the part after its last `node_modules/`. */
function nameAt(location: string): string | undefined {
  const i = location.lastIndexOf('node_modules/');
  return i < 0 ? undefined : location.slice(i + 'node_modules/'.length);
}

/** Every installed copy (hoisted or nested) of a listed package whose version is below the minimum. */
export function belowMinimum(lock: Lockfile, fixed: KnownFixed): BelowMinimum[] {
  const out: BelowMinimum[] = [];
  for (const [location, pkg] of Object.entries(lock.packages)) {
    const name = nameAt(location);
    if (!name || pkg.link || !pkg.version) continue;
    const minimum = fixed.minimums[name];
    if (minimum && compareVersions(pkg.version, minimum) < 0) out.push({ name, location, installed: pkg.version, minimum });
  }
  return out;
}

/** Listed packages that the workspaces' own manifests (lockfile entries without node_modules/) name with differing specifiers. */
export function splitPins(lock: Lockfile, fixed: KnownFixed): SplitPin[] {
  const out: SplitPin[] = [];
  for (const name of Object.keys(fixed.minimums)) {
    const specs: Record<string, string> = {};
    for (const [location, pkg] of Object.entries(lock.packages)) {
      if (location.includes('node_modules/')) continue;
      const spec = pkg.dependencies?.[name];
      if (spec) specs[location || '.'] = spec;
    }
    if (new Set(Object.values(specs)).size > 1) out.push({ name, specs });
  }
  return out;
}

export function repoRoot(): string {
  // Compiled to test/dist/security/; the repository root is three levels up.
  return path.resolve(import.meta.dirname, '..', '..', '..');
}

export function loadRepo(root = repoRoot()): { lock: Lockfile; fixed: KnownFixed } {
  return {
    lock: JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as Lockfile,
    fixed: JSON.parse(readFileSync(path.join(root, 'security', 'known-fixed.json'), 'utf8')) as KnownFixed,
  };
}
