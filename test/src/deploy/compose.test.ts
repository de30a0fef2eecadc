import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { repoRoot } from '../harness/services.js';

const SERVICES = ['ingress', 'orchestrator', 'runner', 'dispatcher', 'admin'];

/** docker-compose 1.29 (Debian's package, installed by .ci/run) validates without a Docker engine. */
function compose(file: string, ...args: string[]) {
  // Only PATH: the file's ${VAR:-default}s must work without any variable set.
  return spawnSync('docker-compose', ['-f', file, '--project-directory', repoRoot, ...args], {
    cwd: repoRoot,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
  });
}

describe('docker-compose.yml', () => {
  const file = path.join(repoRoot, 'docker-compose.yml');

  test('passes `docker-compose config -q`', () => {
    const r = compose(file, 'config', '-q');
    assert.equal(r.error, undefined, `docker-compose could not run: ${r.error?.message}`);
    assert.equal(r.status, 0, r.stderr);
  });

  test('the validation is real: an unknown key fails it', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'compose-'));
    try {
      const broken = path.join(dir, 'docker-compose.yml');
      writeFileSync(broken, readFileSync(file, 'utf8').replace('  redis:\n    image: redis:7-alpine', '  redis:\n    bogus_key: 1\n    image: redis:7-alpine'));
      const r = compose(broken, 'config', '-q');
      assert.notEqual(r.status, 0);
      assert.match(r.stderr, /bogus_key/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('has the infrastructure, a one-shot migrate, and the five services with their own NATS users', () => {
    const r = compose(file, 'config');
    assert.equal(r.status, 0, r.stderr);
    const cfg = parse(r.stdout) as { services: Record<string, any> };
    const names = Object.keys(cfg.services).sort();
    assert.deepEqual(names, ['admin', 'dispatcher', 'ingress', 'jaeger', 'migrate', 'nats', 'orchestrator', 'otel-collector', 'postgres', 'redis', 'runner']);

    const nats = cfg.services.nats;
    const [major, minor] = String(nats.image).split(':')[1].split(/[.-]/).map(Number);
    assert.ok(major > 2 || (major === 2 && minor >= 10), `nats image ${nats.image} is 2.10+`);
    assert.ok(nats.command.includes('-js'), 'JetStream on');
    assert.equal(nats.command[nats.command.indexOf('-m') + 1], '8222', 'monitoring on 8222');
    assert.ok(nats.volumes.some((v: any) => /deploy\/nats\/nats\.conf(:|$)/.test(String(v.source ?? v))), 'generated NATS config mounted');

    assert.equal(cfg.services.migrate.build.target, 'migrate');
    assert.equal(cfg.services.migrate.restart, 'no');
    for (const name of SERVICES) {
      const svc = cfg.services[name];
      assert.equal(svc.build.target, name, `${name} built from its Dockerfile stage`);
      assert.equal(svc.environment.NATS_USER, name, `${name} connects as its own user`);
      assert.equal(svc.environment.NATS_PASSWORD, nats.environment[`NATS_${name.toUpperCase()}_PASSWORD`], `${name}'s password is the one the server has`);
      assert.equal(svc.depends_on.migrate.condition, 'service_completed_successfully');
      assert.equal(svc.depends_on.nats.condition, 'service_healthy');
      assert.match(svc.environment.OTEL_EXPORTER_OTLP_ENDPOINT, /^http:\/\/otel-collector:4318$/);
      assert.equal(svc.environment.OTEL_SERVICE_NAME, `conveyor-${name}`);
      assert.ok(svc.healthcheck.test.join(' ').includes('/health/ready'));
    }
    // The runner decrypts the model keys the admin API encrypted: both get the same key.
    assert.equal(cfg.services.runner.environment.CONVEYOR_SECRET_KEY, cfg.services.admin.environment.CONVEYOR_SECRET_KEY);
    const grace = (s: string) => Number(String(s).replace(/s$/, ''));
    assert.ok(grace(cfg.services.runner.stop_grace_period) > Number(cfg.services.runner.environment.SHUTDOWN_GRACE_SECONDS), 'runner stop grace outlasts its drain');
  });

  test('the Dockerfile: Node 22 base, production dependencies only, non-root, one stage per process', () => {
    const dockerfile = readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8');
    assert.match(dockerfile, /^ARG NODE_IMAGE=node:22[-.\w]*$/m);
    assert.match(dockerfile, /npm ci --omit=dev/);
    assert.match(dockerfile, /PRISMA_SCHEMA_ENGINE_BINARY=\/bin\/true npx prisma generate/);
    const runtime = dockerfile.slice(dockerfile.indexOf('AS runtime'));
    assert.match(runtime, /^USER (?!0\b|root\b)\S+/m, 'runs as a non-root user');
    for (const target of [...SERVICES, 'migrate']) assert.match(dockerfile, new RegExp(`^FROM runtime AS ${target}$`, 'm'));
  });

  test('the Dockerfile installs every workspace the services need: each manifest copied, each library and service in the production install', () => {
    const dockerfile = readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8');
    const workspaces = (JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { workspaces: string[] }).workspaces;
    const prodInstall = dockerfile.slice(dockerfile.indexOf('AS prod-deps'), dockerfile.indexOf('AS runtime'));
    for (const ws of workspaces) {
      assert.ok(dockerfile.includes(`COPY ${ws}/package.json ${ws}/`), `${ws}/package.json is copied before npm ci (the lockfile names it)`);
      if (/^(libs|services)\//.test(ws)) assert.ok(prodInstall.includes(`-w ${ws} `) || prodInstall.includes(`-w ${ws}\n`), `${ws} is in the production install`);
    }
  });
});
