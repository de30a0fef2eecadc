import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { topology } from '@conveyor/contracts';
import { repoRoot } from '../harness/services.js';
import { natsServerConfig } from './nats-config.js';

type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; labels?: Record<string, string> }; [k: string]: any };

const SERVICES = ['ingress', 'orchestrator', 'runner', 'dispatcher', 'admin'];
const overlaysDir = path.join(repoRoot, 'k8s/overlays');
const overlays = readdirSync(overlaysDir).sort();

function render(dir: string): K8sObject[] {
  const out = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return parseAllDocuments(out).map((d) => {
    if (d.errors.length) throw new Error(`${dir}: ${d.errors.map((e) => e.message).join('; ')}`);
    return d.toJS() as K8sObject;
  }).filter(Boolean);
}

/** kubernetes-models for core groups, @kubernetes-models/keda for keda.sh; an unknown type fails. */
async function modelFor(apiVersion: string, kind: string): Promise<new (o: object) => { validate(): void }> {
  const spec = apiVersion.startsWith('keda.sh/') ? `@kubernetes-models/keda/${apiVersion}` : `kubernetes-models/${apiVersion}`;
  const mod = (await import(spec)) as Record<string, unknown>;
  const model = mod[kind];
  if (typeof model !== 'function') throw new Error(`no model for ${apiVersion} ${kind}`);
  return model as new (o: object) => { validate(): void };
}

async function validateAll(objects: K8sObject[]): Promise<void> {
  for (const original of objects) {
    const o = original.kind === 'Secret' ? unwrapSecretData(original) : original;
    const Model = await modelFor(o.apiVersion, o.kind);
    try {
      new Model(o).validate();
    } catch (err) {
      throw new Error(`${o.kind}/${o.metadata?.name} is invalid: ${(err as Error).message}`);
    }
  }
}

/**
 * kustomize folds long base64 values over lines; the API server's base64 decoder skips the line
 * breaks, the schema's "byte" format does not, so they are joined before validating.
 */
function unwrapSecretData(o: K8sObject): K8sObject {
  const data = Object.fromEntries(Object.entries((o.data ?? {}) as Record<string, string>).map(([k, v]) => [k, v.replace(/\s+/g, '')]));
  return { ...o, data };
}

const find = (objs: K8sObject[], kind: string, name: string) => objs.find((o) => o.kind === kind && o.metadata.name === name);
const envOf = (c: any, name: string) => (c.env as any[] | undefined)?.find((e) => e.name === name);

describe('Kubernetes manifests', () => {
  test('there is a dev and a prod overlay', () => {
    assert.deepEqual(overlays, ['dev', 'prod']);
  });

  test('the validator rejects a broken object (so a passing render means something)', async () => {
    const deployment = find(render(path.join(overlaysDir, 'dev')), 'Deployment', 'runner')!;
    await assert.rejects(validateAll([{ ...deployment, spec: { ...deployment.spec, replicas: 'two' } }]), /replicas/);
  });

  test('the base ConfigMap ships the example conveyor.yaml', () => {
    assert.equal(readFileSync(path.join(repoRoot, 'k8s/base/config/conveyor.yaml'), 'utf8'), readFileSync(path.join(repoRoot, 'conveyor.example.yaml'), 'utf8'));
  });

  for (const overlay of overlays) {
    describe(`overlay ${overlay}`, () => {
      const objects = render(path.join(overlaysDir, overlay));

      test('renders, and every object validates against its schema', async () => {
        assert.ok(objects.length > 10);
        await validateAll(objects);
      });

      test('every service: probes, resources, restricted security context, credentials of its own, graceful stop', () => {
        for (const name of SERVICES) {
          const d = find(objects, 'Deployment', name);
          assert.ok(d, `Deployment ${name}`);
          const pod = d.spec.template.spec;
          const c = pod.containers[0];
          assert.equal(c.livenessProbe?.httpGet?.path, '/health/live', `${name} liveness`);
          assert.equal(c.readinessProbe?.httpGet?.path, '/health/ready', `${name} readiness`);
          assert.ok(c.resources?.requests?.cpu && c.resources?.requests?.memory && c.resources?.limits?.memory, `${name} resources`);
          assert.equal(pod.securityContext.runAsNonRoot, true);
          assert.equal(pod.securityContext.seccompProfile.type, 'RuntimeDefault');
          assert.equal(c.securityContext.allowPrivilegeEscalation, false);
          assert.equal(c.securityContext.readOnlyRootFilesystem, true);
          assert.deepEqual(c.securityContext.capabilities.drop, ['ALL']);
          assert.equal(envOf(c, 'NATS_USER')?.value, name, `${name} connects as its own NATS user`);
          const credVolume = pod.volumes.find((v: any) => v.name === 'nats-credentials');
          assert.deepEqual(credVolume.secret.items, [{ key: name, path: 'password' }], `${name} mounts only its own password`);
          const grace = Number(envOf(c, 'SHUTDOWN_GRACE_SECONDS')?.value);
          assert.ok(grace > 0 && pod.terminationGracePeriodSeconds > grace, `${name}: the pod's grace period outlasts the drain`);
          const pdb = objects.find((o) => o.kind === 'PodDisruptionBudget' && o.spec.selector.matchLabels['app.kubernetes.io/name'] === name);
          assert.ok(pdb, `${name} has a PodDisruptionBudget`);
          assert.ok(find(objects, 'Service', name), `${name} has a Service`);
        }
      });

      test('the runner scales on its JetStream consumer with KEDA; the others with HPAs', () => {
        const runs = topology('conveyor');
        const so = objects.find((o) => o.kind === 'ScaledObject');
        assert.equal(so?.spec.scaleTargetRef.name, 'runner');
        const trigger = so!.spec.triggers[0];
        assert.equal(trigger.type, 'nats-jetstream');
        assert.equal(trigger.metadata.stream, runs.consumers.runner.stream);
        assert.equal(trigger.metadata.consumer, runs.consumers.runner.durable);
        assert.match(trigger.metadata.natsServerMonitoringEndpoint, /:8222$/);
        const hpas = objects.filter((o) => o.kind === 'HorizontalPodAutoscaler').map((h) => h.spec.scaleTargetRef.name).sort();
        assert.deepEqual(hpas, ['dispatcher', 'ingress', 'orchestrator']);
      });

      test('the migrate Job loads conveyor.yaml from the ConfigMap', () => {
        const job = objects.find((o) => o.kind === 'Job');
        assert.ok(job);
        const volume = job.spec.template.spec.volumes.find((v: any) => v.configMap);
        const cm = find(objects, 'ConfigMap', volume.configMap.name);
        assert.ok(cm?.data['conveyor.yaml'].includes('pipelines:'));
        assert.equal(envOf(job.spec.template.spec.containers[0], 'CONVEYOR_CONFIG')?.value, '/etc/conveyor/conveyor.yaml');
      });

      if (overlay === 'dev') {
        test('dev runs NATS with the generated config, and every referenced Secret exists', () => {
          const natsCm = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('nats-config'));
          assert.equal(natsCm?.data['nats.conf'], natsServerConfig());
          const nats = find(objects, 'StatefulSet', 'nats')!;
          const args = nats.spec.template.spec.containers[0].args as string[];
          assert.ok(args.includes('-js') && args.join(' ').includes('-m 8222'));
          const secrets = new Set(objects.filter((o) => o.kind === 'Secret').map((o) => o.metadata.name));
          const referenced = new Set<string>();
          JSON.stringify(objects, (k, v) => {
            if (k === 'secretKeyRef' || k === 'secretRef') referenced.add(v.name);
            if (k === 'secret' && v?.secretName) referenced.add(v.secretName);
            return v;
          });
          for (const name of referenced) assert.ok(secrets.has(name), `Secret ${name} is generated in dev`);
        });
      }

      if (overlay === 'prod') {
        test('prod talks TLS to an external NATS and generates no Secrets', () => {
          assert.equal(objects.filter((o) => o.kind === 'Secret').length, 0, 'no secrets in git');
          assert.equal(objects.filter((o) => o.kind === 'StatefulSet').length, 0, 'no in-cluster data stores');
          const env = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('conveyor-env'))!;
          assert.match(env.data.NATS_URL, /^tls:\/\//);
          assert.ok(env.data.NATS_TLS_CA_FILE);
          for (const name of SERVICES) {
            const d = find(objects, 'Deployment', name)!;
            assert.ok(d.spec.template.spec.volumes.some((v: any) => v.secret?.secretName === 'conveyor-nats-tls'), `${name} mounts the NATS CA`);
          }
        });
      }
    });
  }
});
