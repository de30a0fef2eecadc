import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { repoRoot } from '../harness/services.js';
import { composeEnv } from './conformance.js';
import { dockerfileStages, hasTag } from './artifacts.js';
import { passwordVariable, SERVICE_ROLES } from './nats-config.js';

const SERVICES = ['ingress', 'orchestrator', 'runner', 'dispatcher', 'gateway', 'admin', 'sandbox'];
/** The services the collector and the `monitoring` profile's Prometheus scrape (deploy/otel-collector.yaml, deploy/prometheus). */
const SCRAPED = SERVICES.filter((s) => s !== 'sandbox');

/**
 * docker-compose 1.29 (Debian's package, installed by .ci/run) validates without a Docker engine. The
 * environment is what .env.example's own command makes of it, and nothing else.
 */
function compose(file: string, env: Record<string, string> | null, ...args: string[]) {
  return spawnSync('docker-compose', ['-f', file, '--project-directory', repoRoot, ...args], {
    cwd: repoRoot,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...(env ?? composeEnv()) },
  });
}

describe('docker-compose.yml', () => {
  const file = path.join(repoRoot, 'docker-compose.yml');

  test('passes `docker-compose config -q` with the variables .env.example makes', () => {
    const r = compose(file, null, 'config', '-q');
    assert.equal(r.error, undefined, `docker-compose could not run: ${r.error?.message}`);
    assert.equal(r.status, 0, r.stderr);
  });

  test('the validation is real: an unknown key fails it', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'compose-'));
    try {
      const broken = path.join(dir, 'docker-compose.yml');
      writeFileSync(broken, readFileSync(file, 'utf8').replace('  redis:\n    image: redis:7-alpine', '  redis:\n    bogus_key: 1\n    image: redis:7-alpine'));
      const r = compose(broken, null, 'config', '-q');
      assert.notEqual(r.status, 0);
      assert.match(r.stderr, /bogus_key/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('starts with no credential written in the repository: without .env every secret is refused by name', () => {
    const env = composeEnv();
    const secrets = Object.keys(env).filter((k) => /PASSWORD|SECRET|KEY$/.test(k) && k !== 'LLM_API_KEY' && k !== 'CONVEYOR_ADMIN_PASSWORD');
    assert.ok(secrets.length >= 11, secrets.join(', '));
    for (const name of secrets) {
      const { [name]: _left, ...rest } = env;
      const r = compose(file, rest, 'config', '-q');
      assert.notEqual(r.status, 0, `compose starts without ${name}`);
      assert.match(r.stderr, new RegExp(`set ${name} in \\.env`), r.stderr);
    }
  });

  test('every Conveyor service is health-checked and scraped by the collector; published ports stay on loopback', () => {
    const cfg = parse(compose(file, null, 'config').stdout) as { services: Record<string, any> };
    const collector = parse(readFileSync(path.join(repoRoot, 'deploy/otel-collector.yaml'), 'utf8')) as any;
    const scraped = new Map<string, number>(collector.receivers.prometheus.config.scrape_configs.flatMap((j: any) => j.dns_sd_configs.map((d: any) => [d.names[0], d.port])));
    for (const name of SERVICES) assert.match(cfg.services[name].healthcheck.test.join(' '), /127\.0\.0\.1:\d+\/health\/ready/, `${name} is health-checked`);
    for (const name of SCRAPED) {
      const svc = cfg.services[name];
      const port = Number(svc.healthcheck.test.join(' ').match(/127\.0\.0\.1:(\d+)\/health\/ready/)?.[1]);
      assert.equal(scraped.get(name), port, `${name}'s metrics (:${port}) are scraped`);
    }
    for (const [name, svc] of Object.entries(cfg.services)) {
      for (const p of svc.ports ?? []) assert.equal(p.host_ip ?? String(p).split(':')[0], '127.0.0.1', `${name} publishes ${JSON.stringify(p)} on loopback only`);
    }
    for (const [name, svc] of Object.entries(cfg.services)) assert.ok(hasTag(String(svc.image)), `${name}: image ${svc.image} has no tag`);
    const fakes = cfg.services['dev-fakes'];
    assert.deepEqual(fakes.profiles, ['fakes'], 'the fakes are opt-in');
    assert.match(readFileSync(path.join(repoRoot, '.env.example'), 'utf8'), /^COMPOSE_PROFILES=fakes$/m, 'the first start has them');
  });

  test('has the infrastructure, a one-shot migrate, and the services with their own NATS users', () => {
    const r = compose(file, null, 'config');
    assert.equal(r.status, 0, r.stderr);
    const cfg = parse(r.stdout) as { services: Record<string, any> };
    const names = Object.keys(cfg.services).sort();
    assert.deepEqual(names, ['admin', 'dev-fakes', 'dispatcher', 'gateway', 'grafana', 'ingress', 'jaeger', 'migrate', 'nats', 'orchestrator', 'otel-collector', 'postgres', 'prometheus', 'redis', 'runner', 'sandbox']);

    const nats = cfg.services.nats;
    const [major, minor] = String(nats.image).split(':')[1].split(/[.-]/).map(Number);
    assert.ok(major > 2 || (major === 2 && minor >= 10), `nats image ${nats.image} is 2.10+`);
    assert.ok(nats.command.includes('-js'), 'JetStream on');
    assert.equal(nats.command[nats.command.indexOf('-m') + 1], '8222', 'monitoring on 8222');
    assert.ok(nats.volumes.some((v: any) => /deploy\/nats\/nats\.conf(:|$)/.test(String(v.source ?? v))), 'generated NATS config mounted');
    // nats-server refuses a config naming a variable its environment lacks.
    for (const role of [...SERVICE_ROLES, 'plugin', 'ops'] as const) assert.ok(nats.environment[passwordVariable(role)], `the NATS server is given ${passwordVariable(role)}`);

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

  test('the sandbox: its Dockerfile stage, the backends\' network only, no capabilities, and the namespaces bubblewrap needs', () => {
    const r = compose(file, null, 'config');
    assert.equal(r.status, 0, r.stderr);
    const cfg = parse(r.stdout) as { services: Record<string, any>; networks: Record<string, any> };
    const svc = cfg.services.sandbox;
    const stage = dockerfileStages(path.join(repoRoot, 'Dockerfile')).get('sandbox')!;
    assert.equal(svc.build.target, 'sandbox');
    assert.match(svc.healthcheck.test.join(' '), new RegExp(`127\\.0\\.0\\.1:${stage.env.PORT}/health/ready`), 'the health check asks the port the image listens on');
    for (const backend of ['nats', 'redis', 'postgres', 'migrate']) assert.ok(svc.depends_on[backend], `waits for ${backend}`);
    // Its only network is the backends', which has no route out of the host.
    assert.deepEqual(Object.keys(svc.networks), ['backends']);
    assert.equal(cfg.networks.backends.internal, true);
    for (const backend of ['nats', 'redis', 'postgres', 'otel-collector']) assert.ok(Object.keys(cfg.services[backend].networks).includes('backends'), `${backend} is on the backends' network`);
    assert.equal(svc.ports, undefined, 'publishes no port');
    assert.deepEqual(svc.extra_hosts ?? [], [], 'no way to the host');
    // No capabilities and no way to gain any; bubblewrap's namespaces need the engine's filters lifted, and only those.
    assert.equal(svc.privileged, undefined);
    assert.equal(svc.cap_add, undefined);
    assert.deepEqual(svc.cap_drop, ['ALL']);
    assert.deepEqual([...svc.security_opt].sort(), ['apparmor=unconfined', 'no-new-privileges:true', 'seccomp=unconfined', 'systempaths=unconfined']);
    assert.equal(svc.user, undefined, 'runs as the image\'s user');
    assert.match(stage.user ?? '', /^[1-9]\d*(:[1-9]\d*)?$/, 'the image\'s user is not root');
    const grace = Number(String(svc.stop_grace_period).replace(/s$/, ''));
    assert.ok(grace > Number(svc.environment.SHUTDOWN_GRACE_SECONDS), 'the stop grace outlasts the drain');
  });

  test('the `monitoring` profile: Prometheus scrapes every service and loads the alerts, Grafana has the datasource and the dashboards', () => {
    const cfg = parse(compose(file, null, 'config').stdout) as { services: Record<string, any> };
    const { prometheus, grafana } = cfg.services;
    assert.deepEqual(prometheus.profiles, ['monitoring'], 'opt-in');
    assert.deepEqual(grafana.profiles, ['monitoring'], 'opt-in');
    // docker-compose 1.29 prints volumes as `source:target[:ro]`.
    const mounted = (svc: any, target: string): string => {
      const v = (svc.volumes as string[]).map((m) => String(m).split(':')).find((m) => m[1] === target);
      assert.ok(v, `${target} is mounted`);
      assert.equal(v[2], 'ro', `${target} is read-only`);
      return path.relative(repoRoot, v[0]!);
    };

    const configFile = prometheus.command.find((a: string) => a.startsWith('--config.file='))!.split('=')[1];
    const scrape = parse(readFileSync(path.join(repoRoot, mounted(prometheus, configFile)), 'utf8')) as any;
    const targets = new Map<string, number>(scrape.scrape_configs.flatMap((j: any) => (j.dns_sd_configs ?? []).map((d: any) => [d.names[0], d.port])));
    for (const name of SCRAPED) {
      const port = Number(cfg.services[name].healthcheck.test.join(' ').match(/127\.0\.0\.1:(\d+)\/health\/ready/)?.[1]);
      assert.equal(targets.get(name), port, `Prometheus scrapes ${name} on :${port}`);
    }
    // The rules select the service by `container`, as the PodMonitor's targets carry it.
    assert.ok(scrape.scrape_configs[0].relabel_configs.some((r: any) => r.target_label === 'container' && r.source_labels.includes('__meta_dns_name')));
    for (const ruleFile of scrape.rule_files as string[]) assert.equal(mounted(prometheus, ruleFile), 'deploy/prometheus/rules.yml');

    const provisioning = mounted(grafana, '/etc/grafana/provisioning');
    assert.equal(provisioning, 'deploy/grafana/provisioning');
    const datasources = parse(readFileSync(path.join(repoRoot, provisioning, 'datasources/prometheus.yaml'), 'utf8')) as any;
    const promPort = parseInt(String(prometheus.ports[0]).split(':').pop()!, 10);
    assert.equal(datasources.datasources[0].url, `http://prometheus:${promPort}`, 'the datasource is the profile\'s Prometheus');
    const providers = parse(readFileSync(path.join(repoRoot, provisioning, 'dashboards/conveyor.yaml'), 'utf8')) as any;
    assert.equal(mounted(grafana, providers.providers[0].options.path), 'k8s/components/monitoring/dashboards', 'the dashboards the k8s component ships');
    assert.match(grafana.environment.GF_SECURITY_ADMIN_PASSWORD, /^n?[0-9a-f]{16,}$/, 'Grafana\'s admin password comes from .env');
  });

  test('the Dockerfile: Node 24 base, production dependencies only, non-root, one stage per process', () => {
    const dockerfile = readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8');
    assert.match(dockerfile, /^ARG NODE_IMAGE=node:24[-.\w]*$/m);
    assert.match(dockerfile, /npm ci --omit=dev/);
    assert.match(dockerfile, /PRISMA_SCHEMA_ENGINE_BINARY=\/bin\/true npx prisma generate/);
    const runtime = dockerfile.slice(dockerfile.indexOf('AS runtime'));
    assert.match(runtime, /^USER (?!0\b|root\b)\S+/m, 'runs as a non-root user');
    for (const target of [...SERVICES, 'migrate']) assert.match(dockerfile, new RegExp(`^FROM runtime AS ${target}$`, 'm'));
    const stages = dockerfileStages(path.join(repoRoot, 'Dockerfile'));
    for (const target of [...SERVICES, 'migrate']) assert.match(stages.get(target)!.user ?? '', /^[1-9]\d*(:[1-9]\d*)?$/, `${target} runs as a non-root user`);
    // The sandbox's image has what its commands run under: bubblewrap, prlimit (util-linux), tar, Python 3.
    const sandbox = dockerfile.slice(dockerfile.indexOf('FROM runtime AS sandbox'));
    const installed = /apt-get install [^\n]*/.exec(sandbox.slice(0, sandbox.indexOf('\nFROM ')))?.[0] ?? '';
    for (const pkg of ['bubblewrap', 'util-linux', 'tar', 'python3']) assert.match(installed, new RegExp(`\\b${pkg}\\b`), `the sandbox image installs ${pkg}`);
  });

  test('the Dockerfile installs every workspace the services need: each manifest copied, each library and service in the production install', () => {
    const dockerfile = readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8');
    const workspaces = (JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { workspaces: string[] }).workspaces;
    const prodInstall = dockerfile.slice(dockerfile.indexOf('AS prod-deps'), dockerfile.indexOf('AS runtime'));
    const manifest = (ws: string) => JSON.parse(readFileSync(path.join(repoRoot, ws, 'package.json'), 'utf8')) as { name: string; dependencies?: Record<string, string> };
    // A library some package needs at run time; one that is only ever a dev dependency (the test helpers) stays out.
    const runtimeNames = new Set(workspaces.flatMap((ws) => Object.keys(manifest(ws).dependencies ?? {})));
    for (const ws of workspaces) {
      assert.ok(dockerfile.includes(`COPY ${ws}/package.json ${ws}/`), `${ws}/package.json is copied before npm ci (the lockfile names it)`);
      const installed = prodInstall.includes(`-w ${ws} `) || prodInstall.includes(`-w ${ws}\n`);
      if (ws.startsWith('services/') || (ws.startsWith('libs/') && runtimeNames.has(manifest(ws).name))) assert.ok(installed, `${ws} is in the production install`);
      else if (ws.startsWith('libs/')) assert.ok(!installed, `${ws} is needed by tests only and stays out of the production install`);
    }
  });
});
