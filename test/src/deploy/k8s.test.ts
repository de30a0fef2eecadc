import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { topology } from '@conveyor/contracts';
import { repoRoot } from '../harness/services.js';
import { conveyorStage, dockerfileStages, hasTag, kubeWorkloads, renderOverlay, type K8sObject } from './artifacts.js';
import { prodSecrets } from './conformance.js';
import { natsClusterOptions, natsServerConfig, passwordVariable, PROD_CLUSTER_CONFIG, SERVICE_ROLES } from './nats-config.js';


const SERVICES = ['ingress', 'orchestrator', 'runner', 'dispatcher', 'gateway', 'admin', 'sandbox'];
/** Roles nothing calls over HTTP (the runners ask the sandbox over NATS): no Service selects them. */
const NO_SERVICE = new Set(['sandbox']);
const overlaysDir = path.join(repoRoot, 'k8s/overlays');
const overlays = readdirSync(overlaysDir).sort();

const render = renderOverlay;

/** kubernetes-models for core groups, @kubernetes-models/keda and prometheus-operator for theirs; an unknown type fails. */
async function modelFor(apiVersion: string, kind: string): Promise<new (o: object) => { validate(): void }> {
  const spec = apiVersion.startsWith('keda.sh/')
    ? `@kubernetes-models/keda/${apiVersion}`
    : apiVersion.startsWith('monitoring.coreos.com/')
      ? `@kubernetes-models/prometheus-operator/${apiVersion}`
      : `kubernetes-models/${apiVersion}`;
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

/** Settings that hold URLs for a browser (the console's trace links), which no NetworkPolicy needs to allow. */
const BROWSER_LINKS = new Set(['CONSOLE_TRACE_URL_TEMPLATE']);

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
          if (NO_SERVICE.has(name)) assert.equal(objects.filter((o) => o.kind === 'Service' && o.spec.selector?.['app.kubernetes.io/name'] === name).length, 0, `nothing calls ${name} over HTTP: no Service`);
          else assert.ok(find(objects, 'Service', name), `${name} has a Service`);
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

      test('migrations and conveyor.yaml run in the admin\'s init container (no Job to re-create), from the generated ConfigMap', () => {
        assert.equal(objects.filter((o) => o.kind === 'Job').length, 0, 'a Job is immutable: a changed template fails the next apply');
        const admin = find(objects, 'Deployment', 'admin')!.spec.template.spec;
        const init = admin.initContainers.find((c: any) => c.name === 'migrate');
        assert.equal(conveyorStage(init.image), 'migrate');
        const mount = init.volumeMounts.find((m: any) => m.mountPath === '/etc/conveyor');
        const volume = admin.volumes.find((v: any) => v.name === mount.name);
        const cm = find(objects, 'ConfigMap', volume.configMap.name);
        assert.ok(cm?.data['conveyor.yaml'].includes('pipelines:'));
        assert.equal(envOf(init, 'CONVEYOR_CONFIG')?.value, '/etc/conveyor/conveyor.yaml');
      });

      test('every image reference carries a tag, and every Conveyor image names a Dockerfile stage', () => {
        const stages = dockerfileStages(path.join(repoRoot, 'Dockerfile'));
        for (const o of objects) {
          const pod = o.spec?.template?.spec;
          for (const c of [...(pod?.initContainers ?? []), ...(pod?.containers ?? [])]) {
            assert.ok(hasTag(c.image), `${o.kind}/${o.metadata.name} ${c.name}: image ${c.image} has no tag (it would pull latest)`);
            const stage = conveyorStage(c.image);
            if (stage) assert.ok(stages.has(stage), `${o.kind}/${o.metadata.name}: stage ${stage} exists`);
          }
        }
      });

      test('every ConfigMap and Secret a workload references exists, with the keys it reads', () => {
        const stages = dockerfileStages(path.join(repoRoot, 'Dockerfile'));
        // Throws naming the workload and the missing object or key.
        const workloads = kubeWorkloads(overlay, objects, stages, overlay === 'prod' ? prodSecrets().secrets : {});
        assert.ok(workloads.length >= 6);
      });

      test('autoscaled Deployments leave the replica count to their autoscaler', () => {
        const scaled = objects.filter((o) => o.kind === 'HorizontalPodAutoscaler' || o.kind === 'ScaledObject').map((o) => o.spec.scaleTargetRef.name);
        assert.deepEqual([...scaled].sort(), ['dispatcher', 'ingress', 'orchestrator', 'runner']);
        for (const name of scaled) assert.equal(find(objects, 'Deployment', name)!.spec.replicas, undefined, `${name} sets replicas, so every apply scales it back`);
      });

      test('every disruption budget allows a disruption at the fewest pods the workload runs', () => {
        for (const pdb of objects.filter((o) => o.kind === 'PodDisruptionBudget')) {
          const name = pdb.spec.selector.matchLabels['app.kubernetes.io/name'];
          const hpa = objects.find((o) => o.kind === 'HorizontalPodAutoscaler' && o.spec.scaleTargetRef.name === name);
          const so = objects.find((o) => o.kind === 'ScaledObject' && o.spec.scaleTargetRef.name === name);
          const fewest = hpa ? hpa.spec.minReplicas : so ? so.spec.minReplicaCount : (find(objects, 'Deployment', name) ?? find(objects, 'StatefulSet', name))!.spec.replicas;
          const allowed = pdb.spec.maxUnavailable !== undefined ? Math.min(pdb.spec.maxUnavailable, fewest) : fewest - pdb.spec.minAvailable;
          assert.ok(allowed >= 1, `${name}: at ${fewest} pods the budget allows ${allowed} disruptions, so a node drain hangs`);
        }
      });

      test('configuration is generated with content hashes, so a change rolls the pods that use it', () => {
        const referenced = new Set<string>();
        JSON.stringify(objects.filter((o) => o.spec?.template), (k, v) => {
          if ((k === 'configMapRef' || k === 'configMapKeyRef' || k === 'configMap') && v?.name) referenced.add(v.name);
          return v;
        });
        assert.ok(referenced.size >= 2);
        for (const name of referenced) assert.match(name, /-[a-z0-9]{10}$/, `ConfigMap ${name} carries no content hash`);
      });

      test('the resolved environment keeps deployment.environment.name and names each pod', () => {
        const stages = dockerfileStages(path.join(repoRoot, 'Dockerfile'));
        const workloads = kubeWorkloads(overlay, objects, stages, overlay === 'prod' ? prodSecrets().secrets : {});
        for (const w of workloads.filter((x) => SERVICES.includes(x.name))) {
          const env = w.containers[0]!.env;
          assert.match(env.OTEL_RESOURCE_ATTRIBUTES ?? '', new RegExp(`(^|,)deployment\\.environment\\.name=${overlay}(,|$)`), `${w.name}: ${env.OTEL_RESOURCE_ATTRIBUTES}`);
          assert.equal(env.POD_NAME, w.podName, `${w.name}: service.instance.id comes from POD_NAME`);
        }
      });

      test('webhooks and the console are on separate Ingresses, each with a host, TLS where served publicly, and a class', () => {
        const ingresses = objects.filter((o) => o.kind === 'Ingress');
        const backends = (i: K8sObject) => new Set<string>(i.spec.rules.flatMap((r: any) => r.http.paths.map((p: any) => p.backend.service.name)));
        const webhooks = ingresses.find((i) => [...backends(i)].includes('ingress'))!;
        const consoleIngress = ingresses.find((i) => [...backends(i)].includes('admin'))!;
        assert.ok(webhooks && consoleIngress && webhooks !== consoleIngress);
        assert.deepEqual([...backends(webhooks)], ['ingress']);
        assert.deepEqual([...backends(consoleIngress)], ['admin']);
        for (const i of [webhooks, consoleIngress]) {
          assert.ok(i.spec.ingressClassName, `${i.metadata.name} has a class`);
          assert.ok(i.spec.rules.every((r: any) => r.host), `${i.metadata.name} has a host`);
          if (overlay === 'prod') assert.deepEqual(i.spec.tls[0].hosts, i.spec.rules.map((r: any) => r.host), `${i.metadata.name} serves its host over TLS`);
        }
        assert.notEqual(webhooks.spec.rules[0].host, consoleIngress.spec.rules[0].host);
        // The console's webhook URLs: the admin alone is told the webhooks Ingress's public address.
        const adminEnv = find(objects, 'Deployment', 'admin')!.spec.template.spec.containers[0];
        const scheme = overlay === 'prod' ? 'https' : 'http';
        assert.equal(envOf(adminEnv, 'INGRESS_PUBLIC_URL')?.value, `${scheme}://${webhooks.spec.rules[0].host}`);
        assert.equal(objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('conveyor-env'))?.data?.INGRESS_PUBLIC_URL, undefined, 'not in the ConfigMap every role reads');
        // Health and metrics are on the metrics port, which no Service exposes.
        for (const name of SERVICES) {
          const svc = find(objects, 'Service', name);
          if (!NO_SERVICE.has(name)) assert.deepEqual(svc!.spec.ports.map((p: any) => p.targetPort), ['http'], `${name}'s Service exposes only its own routes`);
          const c = find(objects, 'Deployment', name)!.spec.template.spec.containers[0];
          for (const probe of [c.startupProbe, c.livenessProbe, c.readinessProbe]) assert.equal(probe.httpGet.port, 'metrics');
        }
      });

      test('a NetworkPolicy per role lets it reach what its environment names, and nothing calls the roles nobody calls', () => {
        const stages = dockerfileStages(path.join(repoRoot, 'Dockerfile'));
        const workloads = kubeWorkloads(overlay, objects, stages, overlay === 'prod' ? prodSecrets().secrets : {});
        for (const name of SERVICES) {
          const np = objects.find((o) => o.kind === 'NetworkPolicy' && o.spec.podSelector.matchLabels?.['app.kubernetes.io/name'] === name);
          assert.ok(np, `${name} has a NetworkPolicy`);
          assert.deepEqual(np.spec.policyTypes, ['Ingress', 'Egress']);
          const egressPorts = new Set<number>(np.spec.egress.flatMap((r: any) => (r.ports ?? []).map((p: any) => p.port)));
          const w = workloads.find((x) => x.name === name)!;
          // conveyor.yaml's inputs (callback and model URLs) are configuration the init container stores, not its connections.
          const configInputs = new Set(Object.keys(overlay === 'prod' ? prodSecrets().secrets['conveyor-config-env']! : find(objects, 'Secret', objects.find((o) => o.kind === 'Secret' && o.metadata.name.startsWith('conveyor-config-env'))!.metadata.name)!.data));
          for (const c of [...w.init, ...w.containers]) {
            for (const [k, v] of Object.entries(c.env)) {
              if (c.name === 'migrate' && configInputs.has(k)) continue;
              // Links the console hands to operators' browsers, not connections the service makes.
              if (BROWSER_LINKS.has(k)) continue;
              for (const m of v.matchAll(/\b(nats|tls|redis|rediss|postgresql|postgres|http|https):\/\/(?:[^@/\s,]*@)?[^:/\s,]+(?::(\d+))?/g)) {
                const port = m[2] ? Number(m[2]) : ({ nats: 4222, tls: 4222, redis: 6379, rediss: 6379, postgresql: 5432, postgres: 5432, http: 80, https: 443 } as Record<string, number>)[m[1]!]!;
                assert.ok(egressPorts.has(port), `${name}: ${k} reaches port ${port}, which its NetworkPolicy does not allow`);
              }
            }
          }
          const open = np.spec.ingress.filter((r: any) => !r.from).flatMap((r: any) => r.ports.map((p: any) => p.port));
          assert.deepEqual(open, ['ingress', 'admin'].includes(name) ? ['http'] : [], `${name}: who may call it from anywhere`);
        }
      });

      test('the sandbox: its own Deployment, the restricted security settings kept, a documented runtime class slot, its workspaces on a size-limited emptyDir', () => {
        const d = find(objects, 'Deployment', 'sandbox')!;
        assert.equal(conveyorStage(d.spec.template.spec.containers[0].image), 'sandbox', 'the Dockerfile\'s sandbox stage');
        assert.equal(d.spec.replicas, 2, 'two replicas, not autoscaled (a scale-down would cut running commands short)');
        assert.ok(!objects.some((o) => (o.kind === 'HorizontalPodAutoscaler' || o.kind === 'ScaledObject') && o.spec.scaleTargetRef.name === 'sandbox'));
        const pod = d.spec.template.spec;
        const c = pod.containers[0];
        // The restricted Pod Security profile, field by field, on the pod and the container.
        assert.equal(pod.securityContext.runAsNonRoot, true);
        assert.notEqual(pod.securityContext.runAsUser, 0);
        assert.equal(pod.securityContext.seccompProfile.type, 'RuntimeDefault');
        assert.equal(c.securityContext.allowPrivilegeEscalation, false);
        assert.equal(c.securityContext.readOnlyRootFilesystem, true);
        assert.deepEqual(c.securityContext.capabilities, { drop: ['ALL'] }, 'no capability added');
        assert.notEqual(c.securityContext.privileged, true);
        assert.equal(c.securityContext.procMount, undefined, 'the default (masked) /proc');
        assert.ok(!pod.hostNetwork && !pod.hostPID && !pod.hostIPC && !(pod.volumes as any[]).some((v) => v.hostPath), 'nothing of the node\'s');
        assert.equal(pod.automountServiceAccountToken, false, 'no Kubernetes API token for the agent\'s commands to find');
        // Stronger isolation is the operator's choice: the slot is there, commented and explained.
        assert.equal(pod.runtimeClassName, undefined);
        const manifest = readFileSync(path.join(repoRoot, 'k8s/base/deployment-sandbox.yaml'), 'utf8');
        assert.match(manifest, /^\s*# runtimeClassName: \S+$/m, 'a commented runtimeClassName slot');
        const slot = manifest.slice(0, manifest.search(/^\s*# runtimeClassName:/m));
        assert.match(slot, /gVisor/);
        assert.match(slot, /Kata/);
        assert.match(manifest, /RuntimeDefault seccomp[\s#]+profile[\s\S]*refuses/, 'why RuntimeDefault may stop bubblewrap is said');
        // Its copies of workspaces on an emptyDir of bounded size, at SANDBOX_DIR.
        const dir = envOf(c, 'SANDBOX_DIR')?.value;
        const mount = c.volumeMounts.find((m: any) => m.mountPath === dir);
        assert.ok(mount, `SANDBOX_DIR (${dir}) is a mounted volume`);
        const volume = pod.volumes.find((v: any) => v.name === mount.name);
        assert.ok(volume.emptyDir?.sizeLimit, `${mount.name}: an emptyDir with a sizeLimit`);
        assert.ok(c.resources.limits.cpu && c.resources.limits.memory, 'the commands run in its cgroup: bounded together');
      });

      test('the sandbox\'s NetworkPolicy: no ingress but metrics scraping, egress denied but to NATS, Redis, Postgres, the trace collector and DNS', () => {
        const np = objects.find((o) => o.kind === 'NetworkPolicy' && o.spec.podSelector.matchLabels?.['app.kubernetes.io/name'] === 'sandbox')!;
        assert.ok(np);
        assert.deepEqual(np.spec.policyTypes, ['Ingress', 'Egress'], 'both directions denied unless allowed');
        // Every NetworkPolicy selecting the pods counts (they add up): only this one may.
        const selecting = objects.filter((o) => o.kind === 'NetworkPolicy' && (Object.keys(o.spec.podSelector.matchLabels ?? {}).length === 0 || o.spec.podSelector.matchLabels['app.kubernetes.io/name'] === 'sandbox'));
        assert.deepEqual(selecting.map((o) => o.metadata.name), [np.metadata.name]);
        for (const rule of np.spec.ingress) {
          assert.deepEqual(rule.ports, [{ port: 'metrics' }], 'the metrics port only');
          assert.deepEqual(rule.from, [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }], 'from Prometheus\'s namespace only');
        }
        const allowed: string[] = [];
        for (const rule of np.spec.egress) {
          assert.ok(rule.ports?.length, `an egress rule without ports allows every port: ${JSON.stringify(rule)}`);
          for (const p of rule.ports) allowed.push(`${p.port}/${p.protocol ?? 'TCP'}`);
        }
        assert.deepEqual(new Set(allowed), new Set(['53/UDP', '53/TCP', '4222/TCP', '6379/TCP', '5432/TCP', '4317/TCP', '4318/TCP']), 'no web (80, 443), no other role\'s port');
      });

      test('the NATS servers the overlay ships are given every password the generated config reads, each from its role\'s key', () => {
        const nats = find(objects, 'StatefulSet', 'nats')!.spec.template.spec.containers[0];
        for (const role of [...SERVICE_ROLES, 'plugin', 'ops'] as const) {
          const ref = envOf(nats, passwordVariable(role))?.valueFrom?.secretKeyRef;
          // dev generates the Secret (its name gets a content hash); prod's is made by the operator.
          assert.match(ref?.name ?? '', /^conveyor-nats-credentials(-[a-z0-9]{10})?$/, `${passwordVariable(role)} (nats-server refuses a config naming a variable it lacks)`);
          assert.equal(ref.key, role, passwordVariable(role));
        }
      });

      test('replicas spread over nodes and zones', () => {
        for (const name of SERVICES) {
          const keys = (find(objects, 'Deployment', name)!.spec.template.spec.topologySpreadConstraints ?? []).map((t: any) => t.topologyKey);
          assert.deepEqual(keys, ['kubernetes.io/hostname', 'topology.kubernetes.io/zone'], name);
        }
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
        test('prod scrapes every role\'s metrics port and alerts on what docs/OBSERVABILITY.md names, with metrics that exist', () => {
          const pm = objects.find((o) => o.kind === 'PodMonitor')!;
          assert.deepEqual(pm.spec.selector.matchExpressions[0].values, SERVICES);
          assert.equal(pm.spec.podMetricsEndpoints[0].port, 'metrics');
          const rules = objects.find((o) => o.kind === 'PrometheusRule')!.spec.groups.flatMap((g: any) => g.rules);
          // That each metric and label an alert reads is exported: monitoring.test.ts, against the running services.
          const operations = readFileSync(path.join(repoRoot, 'docs/OBSERVABILITY.md'), 'utf8');
          for (const r of rules) assert.ok(operations.includes(r.alert), `${r.alert} is described in docs/OBSERVABILITY.md`);
          assert.ok(rules.length >= 5);
        });

        test('prod talks TLS to NATS and generates no Secrets', () => {
          assert.equal(objects.filter((o) => o.kind === 'Secret').length, 0, 'no secrets in git');
          const config = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('conveyor-config-'))!.data['conveyor.yaml'] as string;
          const defaulted = config.split('\n').filter((l) => !l.trim().startsWith('#') && /\$\{[A-Z0-9_]+:-/.test(l));
          assert.deepEqual(defaulted, [], 'prod\'s conveyor.yaml falls back to no value written in the repository');
          assert.deepEqual(objects.filter((o) => o.kind === 'StatefulSet').map((o) => o.metadata.name), ['nats'], 'no in-cluster data stores but NATS');
          const env = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('conveyor-env'))!;
          assert.match(env.data.NATS_URL, /^tls:\/\//);
          assert.ok(env.data.NATS_TLS_CA_FILE);
          for (const name of SERVICES) {
            const d = find(objects, 'Deployment', name)!;
            assert.ok(d.spec.template.spec.volumes.some((v: any) => v.secret?.secretName === 'conveyor-nats-tls'), `${name} mounts the NATS CA`);
          }
        });

        test('prod runs NATS as a 3-node JetStream cluster: the generated config, routes to the pods\' stable names, TLS, a budget of one, one node per machine', () => {
          const namespace = objects.find((o) => o.kind === 'Namespace')!.metadata.name;
          const sts = find(objects, 'StatefulSet', 'nats')!;
          const replicas: number = sts.spec.replicas;
          assert.equal(replicas, 3);
          assert.equal(sts.spec.podManagementPolicy, 'Parallel', 'the nodes start together (a lone first node elects no meta leader)');
          const pod = sts.spec.template.spec;
          const c = pod.containers[0];
          assert.equal(c.image, find(render(path.join(overlaysDir, 'dev')), 'StatefulSet', 'nats')!.spec.template.spec.containers[0].image, 'the NATS version dev runs');
          assert.ok((c.args as string[]).includes('-js'));
          // The generated config, for the namespace the overlay deploys to.
          const configVolume = pod.volumes.find((v: any) => v.configMap);
          const cm = find(objects, 'ConfigMap', configVolume.configMap.name)!;
          assert.equal(cm.data['nats.conf'], natsServerConfig({ ...PROD_CLUSTER_CONFIG, cluster: natsClusterOptions(namespace, replicas) }), `nats.conf is the generated one for namespace ${namespace}: \`node test/dist/deploy/nats-config.js\``);
          const conf = cm.data['nats.conf'] as string;
          // The routes name each pod under the governing headless Service, on the container's cluster port.
          const headless = find(objects, 'Service', sts.spec.serviceName)!;
          assert.equal(headless.spec.clusterIP, 'None');
          assert.equal(headless.spec.publishNotReadyAddresses, true, 'the nodes find each other before they are ready');
          const port = (name: string) => c.ports.find((p: any) => p.name === name).containerPort;
          for (let i = 0; i < replicas; i++) assert.ok(conf.includes(`nats-route://nats-${i}.${headless.metadata.name}.${namespace}.svc.cluster.local:${port('cluster')}`), `a route to nats-${i}`);
          assert.match(conf, /^server_name: \$POD_NAME$/m);
          assert.deepEqual(envOf(c, 'POD_NAME')?.valueFrom, { fieldRef: { fieldPath: 'metadata.name' } });
          assert.ok(headless.spec.ports.some((p: any) => p.targetPort === 'cluster') && headless.spec.ports.some((p: any) => p.targetPort === 'client'));
          assert.ok(find(objects, 'Service', 'nats')!.spec.clusterIP !== 'None', 'a client Service');
          // TLS for clients and routes from the servers' Secret, mounted where the config reads it.
          const tlsMount = c.volumeMounts.find((m: any) => pod.volumes.find((v: any) => v.name === m.name)?.secret);
          assert.equal(pod.volumes.find((v: any) => v.name === tlsMount.name).secret.secretName, 'conveyor-nats-server-tls');
          assert.ok(conf.includes(`cert_file: "${tlsMount.mountPath}/tls.crt"`) && /cluster \{[\s\S]*tls \{[\s\S]*verify: true/.test(conf), 'route TLS, each node verifying the other');
          // JetStream on its own volume, below the volume's size.
          const data = sts.spec.volumeClaimTemplates[0];
          assert.ok(c.volumeMounts.some((m: any) => m.name === data.metadata.name && conf.includes(`store_dir: "${m.mountPath}/`)));
          const size = (q: string) => Number(/^(\d+)/.exec(q)![1]) * ({ G: 1e9, Gi: 2 ** 30, T: 1e12, Ti: 2 ** 40 } as Record<string, number>)[/^\d+(\w+)$/.exec(q)![1]!]!;
          assert.ok(size(/max_file_store: (\S+)/.exec(conf)![1]!) < size(data.spec.resources.requests.storage));
          // Probes on the monitoring port; restricted like every workload; one per machine; one disruption at a time.
          assert.equal(c.readinessProbe.httpGet.path, '/healthz?js-enabled-only=true');
          assert.equal(c.readinessProbe.httpGet.port, 'monitor');
          assert.ok(c.livenessProbe?.httpGet && c.startupProbe?.httpGet);
          assert.ok(c.resources?.requests?.cpu && c.resources?.requests?.memory && c.resources?.limits?.memory);
          assert.equal(pod.securityContext.runAsNonRoot, true);
          assert.equal(pod.securityContext.seccompProfile.type, 'RuntimeDefault');
          assert.equal(c.securityContext.allowPrivilegeEscalation, false);
          assert.equal(c.securityContext.readOnlyRootFilesystem, true);
          assert.deepEqual(c.securityContext.capabilities.drop, ['ALL']);
          assert.equal(pod.automountServiceAccountToken, false);
          const anti = pod.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0];
          assert.equal(anti.topologyKey, 'kubernetes.io/hostname');
          assert.deepEqual(anti.labelSelector.matchLabels, sts.spec.selector.matchLabels);
          const pdb = objects.find((o) => o.kind === 'PodDisruptionBudget' && o.spec.selector.matchLabels['app.kubernetes.io/name'] === 'nats')!;
          assert.equal(pdb.spec.maxUnavailable, 1);
          // Routes only between the nodes.
          const np = objects.find((o) => o.kind === 'NetworkPolicy' && o.spec.podSelector.matchLabels?.['app.kubernetes.io/name'] === 'nats')!;
          assert.deepEqual(np.spec.policyTypes, ['Ingress', 'Egress']);
          const routeRule = np.spec.ingress.find((r: any) => r.ports.some((p: any) => p.port === 'cluster'));
          assert.deepEqual(routeRule.from, [{ podSelector: { matchLabels: sts.spec.selector.matchLabels } }]);
          // The services reach every node by its stable name, keep a copy of each stream on each, and KEDA asks each node.
          const env = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('conveyor-env'))!.data;
          assert.deepEqual(env.NATS_URL.split(','), Array.from({ length: replicas }, (_, i) => `tls://nats-${i}.${headless.metadata.name}.${namespace}.svc.cluster.local:${port('client')}`));
          assert.equal(Number(env.NATS_STREAM_REPLICAS), replicas);
          const so = objects.find((o) => o.kind === 'ScaledObject')!;
          assert.equal(so.spec.triggers[0].metadata.natsServerMonitoringEndpoint, `${headless.metadata.name}.${namespace}.svc.cluster.local:${port('monitor')}`);
        });
      }
    });
  }
});
