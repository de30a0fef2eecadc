import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repoRoot } from '../harness/services.js';

/** Every page of the documentation: the README and docs/, recursively. */
function pages(): string[] {
  const walk = (dir: string): string[] => readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? walk(full) : name.endsWith('.md') ? [full] : [];
  });
  return [path.join(repoRoot, 'README.md'), ...walk(path.join(repoRoot, 'docs'))];
}

const relative = (file: string) => path.relative(repoRoot, file);

/** A heading's anchor as GitHub makes it. */
function slug(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

function anchors(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set(text.split('\n').filter((l) => /^#{1,6} /.test(l)).map((l) => slug(l.replace(/^#+ /, ''))));
}

/** The commands a page shows: each line of its sh blocks, without its comment. */
function commands(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/```(?:sh|bash|shell)\n([\s\S]*?)```/g)].flatMap((m) => m[1]!.split('\n'))
    .map((l) => l.split(/\s+#\s/)[0]!.trim()).filter((l) => l !== '' && !l.startsWith('#'));
}

/**
 * Where each command the docs show is run: a test of its own (that test's file must hold the
 * evidence, the command's part that it runs), or this file (`here`). A command shown that is not here
 * fails: a page may show only what a test runs.
 */
const RUN_BY: Array<{ command: RegExp; file: string; evidence: string }> = [
  { command: /^npm start$/, file: 'test/src/e2e/start-bare-driver.ts', evidence: "run('start.mjs')" },
  { command: /^npm run dev:fakes$/, file: 'test/src/e2e/start-bare-driver.ts', evidence: "run('dev-fakes.mjs')" },
  { command: /^npm run send -- "[^"]+"$/, file: 'test/src/e2e/start-bare-driver.ts', evidence: "run('send.mjs', [text])" },
  { command: /^npm test$/, file: '.ci/run', evidence: 'npm test' },
  { command: /^npm run compose:env$/, file: 'test/src/repo/docs.test.ts', evidence: 'compose:env' },
  { command: /^npm run compose:env && docker compose up$/, file: 'test/src/repo/docs.test.ts', evidence: 'compose:env' },
  // The deploy conformance tests (conformance-{compose,dev,prod}.test.ts) start every workload as the
  // engine would and send a message through the fakes, whose answer they read.
  { command: /^docker compose (--profile \w+ )*up( --build)?$/, file: 'test/src/deploy/conformance.ts', evidence: 'What `docker compose --profile fakes up` starts' },
  { command: /^docker compose logs -f dev-fakes$/, file: 'test/src/deploy/conformance.ts', evidence: "image.includes('dev-fakes')" },
  { command: /^kubectl (apply -k|kustomize) k8s\/overlays\/(dev|prod)$/, file: 'test/src/deploy/conformance.ts', evidence: "renderOverlay(path.join(repoRoot, 'k8s/overlays', target))" },
  { command: /^sudo apt install nats-server redis-server$/, file: '.ci/run', evidence: 'nats-server' },
  { command: /^node examples\/keyword-plugin\/dist\/main\.js$/, file: 'test/src/e2e/plugins.test.ts', evidence: 'keyword-plugin' },
];

describe('the documentation', () => {
  test('every link between pages reaches a file, and every anchor a heading of it', () => {
    const broken: string[] = [];
    for (const page of pages()) {
      // Code, fenced or inline, holds no links.
      const text = readFileSync(page, 'utf8').replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^(https?:|mailto:)/.test(target!)) continue;
        const [file, anchor] = target!.split('#');
        const resolved = file ? path.resolve(path.dirname(page), file) : page;
        if (!existsSync(resolved)) broken.push(`${relative(page)}: ${target} (no such file)`);
        else if (anchor && resolved.endsWith('.md') && !anchors(resolved).has(anchor)) broken.push(`${relative(page)}: ${target} (no such heading)`);
      }
    }
    assert.deepEqual(broken, []);
  });

  test('the README stays a front page: at most 150 lines', () => {
    const lines = readFileSync(path.join(repoRoot, 'README.md'), 'utf8').trimEnd().split('\n').length;
    assert.ok(lines <= 150, `README.md has ${lines} lines`);
  });

  test('every command a page shows is run by a test', () => {
    const unrun: string[] = [];
    for (const page of pages()) {
      for (const command of commands(page)) {
        const by = RUN_BY.find((r) => r.command.test(command));
        if (!by) {
          unrun.push(`${relative(page)}: ${command}`);
          continue;
        }
        const source = readFileSync(path.join(repoRoot, by.file), 'utf8');
        assert.ok(source.includes(by.evidence), `${by.file} should run "${command}" (it holds no "${by.evidence}")`);
      }
    }
    assert.deepEqual(unrun, [], 'commands no test runs (add one, or the command to RUN_BY with the test that runs it)');
  });

  test('npm run compose:env writes an .env with every secret filled, which compose accepts; it keeps an existing one', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'compose-env-'));
    try {
      const env = path.join(dir, '.env');
      execFileSync('npm', ['run', '--silent', 'compose:env', '--', '--out', env], { cwd: repoRoot, stdio: 'pipe' });
      const written = readFileSync(env, 'utf8');
      const unfilled = written.split('\n').filter((l) => !l.startsWith('#') && /<[^>]*>/.test(l));
      assert.deepEqual(unfilled, []);
      assert.match(written, /^CONVEYOR_SECRET_KEY=[A-Za-z0-9+/]{43}=$/m);
      const again = spawnSync('npm', ['run', '--silent', 'compose:env', '--', '--out', env], { cwd: repoRoot, encoding: 'utf8' });
      assert.equal(again.status, 1);
      assert.match(again.stderr, /exists; kept/);
      assert.equal(readFileSync(env, 'utf8'), written);
      const compose = spawnSync('docker-compose', ['--env-file', env, '-f', path.join(repoRoot, 'docker-compose.yml'), 'config', '-q'], { cwd: repoRoot, encoding: 'utf8' });
      assert.equal(compose.status, 0, compose.stderr);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('npm run reset deletes the data folder, and refuses while npm start runs', () => {
    const home = mkdtempSync(path.join(tmpdir(), 'conveyor-reset-'));
    try {
      execFileSync('sh', ['-c', `echo ${process.pid} > "${home}/start.pid"`]);
      const refused = spawnSync('npm', ['run', '--silent', 'reset'], { cwd: repoRoot, env: { ...process.env, CONVEYOR_HOME: home }, encoding: 'utf8' });
      assert.equal(refused.status, 1);
      assert.match(refused.stderr, /npm start is running/);
      rmSync(path.join(home, 'start.pid'));
      const reset = spawnSync('npm', ['run', '--silent', 'reset'], { cwd: repoRoot, env: { ...process.env, CONVEYOR_HOME: home }, encoding: 'utf8' });
      assert.equal(reset.status, 0, reset.stderr);
      assert.equal(existsSync(home), false);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
