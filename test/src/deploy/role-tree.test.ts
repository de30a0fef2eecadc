// Each role's image tree (scripts/role-tree.mjs, run by the Dockerfile) holds what the role's process
// loads and nothing else; the deploy conformance suite starts every role from exactly this tree.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../harness/services.js';

const ROLES = ['ingress', 'orchestrator', 'runner', 'dispatcher', 'gateway', 'admin', 'sandbox', 'migrate'];

function files(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) files(full, out);
    else out.push(full);
  }
  return out;
}

describe('role trees', () => {
  const scratch = mkdtempSync(path.join(repoRoot, '.conformance-'));
  const tree = (role: string) => {
    const dir = path.join(scratch, role);
    if (!existsSync(dir)) execFileSync(process.execPath, [path.join(repoRoot, 'scripts/role-tree.mjs'), role, dir, '--link']);
    return dir;
  };

  test('no TypeScript sources, unit tests, test helpers, declarations or benchmarks in any role', () => {
    for (const role of ROLES) {
      const own = files(tree(role)).filter((f) => !f.includes(`${path.sep}node_modules${path.sep}`)).map((f) => path.relative(tree(role), f));
      assert.ok(own.length > 10, `${role}: ${own.length} files of its own`);
      const offending = own.filter((f) => /\.ts$|\.test\.js$|\.tsbuildinfo$/.test(f) || /^(test|bench|examples)\//.test(f) || f.includes(`${path.sep}src${path.sep}`));
      // Test helpers stay out too: a package's testing entry (the shared ones are in libs/test-support, which no role loads).
      const helpers = own.filter((f) => /[\\/]dist[\\/](testing([\\/]|\.js)|test-[^\\/]*\.js)/.test(f));
      assert.deepEqual(helpers, [], `${role}: test helpers`);
      assert.deepEqual(offending, [], role);
    }
  });

  test('a role carries its own workspaces and packages, not another role\'s', () => {
    const has = (role: string, rel: string) => existsSync(path.join(tree(role), rel));
    assert.ok(has('admin', 'apps/console/web'), 'the admin serves the console');
    assert.ok(has('runner', 'node_modules/openai'), 'the runner calls models');
    assert.ok(has('migrate', 'prisma/migrations'), 'migrate applies the SQL migrations');
    // The sandbox runs the agent's commands with its own library; the runner asks it through the same library's client.
    assert.ok(has('sandbox', 'libs/sandbox/dist/server/index.js') && has('sandbox', 'libs/sandbox/lua'), 'the sandbox has its server and its Lua scripts');
    assert.ok(has('runner', 'libs/sandbox/dist/client.js'), 'the runner has the sandbox client');
    for (const role of ['ingress', 'orchestrator', 'dispatcher', 'gateway', 'runner', 'sandbox', 'migrate']) {
      assert.ok(!has(role, 'apps/console'), `${role} has no console`);
      assert.ok(!has(role, 'services/admin'), `${role} has no admin service`);
    }
    // The admin tests models and MCP servers with the agent's own client.
    for (const role of ['ingress', 'orchestrator', 'dispatcher', 'gateway', 'sandbox']) {
      assert.ok(!has(role, 'node_modules/openai') && !has(role, 'libs/agent'), `${role} has no agent`);
    }
    for (const role of ROLES) {
      assert.ok(!has(role, 'node_modules/typescript') && !has(role, 'node_modules/prisma'), `${role}: no compiler or Prisma CLI`);
      for (const other of ROLES.filter((r) => r !== role && r !== 'migrate')) if (role !== 'migrate') assert.ok(!has(role, `services/${other}`), `${role} holds services/${other}`);
    }
  });

  test('a native addon keeps its binary and drops what node-gyp built it from', () => {
    const re2 = path.join(tree('ingress'), 'node_modules/re2');
    assert.ok(statSync(path.join(re2, 'build/Release/re2.node')).isFile());
    assert.ok(!existsSync(path.join(re2, 'build/Release/obj.target')) && !existsSync(path.join(re2, 'vendor')));
  });

  test('--sizes prints every role and the whole tree for comparison', () => {
    const out = execFileSync(process.execPath, [path.join(repoRoot, 'scripts/role-tree.mjs'), '--sizes'], { encoding: 'utf8' });
    for (const role of [...ROLES, 'every role']) assert.match(out, new RegExp(`^${role}\\s+[\\d.]+ MiB`, 'm'));
    rmSync(scratch, { recursive: true, force: true });
  });
});
