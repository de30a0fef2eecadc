/**
 * What the shipped deployment artifacts say a container is: the Dockerfile's stages, the rendered
 * Kubernetes overlays and the compose file, each read into the same `Workload` shape (image, command,
 * working directory, environment, mounted files, probes, user), resolved the way the engine resolves
 * them. Nothing here restates a manifest: every value comes from the artifact.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml, parseAllDocuments } from 'yaml';

// ---------------------------------------------------------------- Dockerfile

export interface ImageConfig {
  stage: string;
  workdir: string;
  env: Record<string, string>;
  entrypoint: string[];
  cmd: string[];
  user?: string;
  /** Files the stage's COPY steps place at absolute paths from the build context: container path → repo path. */
  contextFiles: Record<string, string>;
  /** Trees the stage's COPY steps take from other stages: container path → { stage, path in that stage }. */
  stageCopies: Record<string, { from: string; path: string }>;
  exposed: number[];
}

/**
 * The configuration of the base images the Dockerfile starts from, as their own Dockerfiles set it
 * (the official Node image: `docker-entrypoint.sh` and `CMD ["node"]`).
 */
const BASE_IMAGES: Record<string, Omit<ImageConfig, 'stage' | 'contextFiles' | 'stageCopies' | 'exposed'>> = {
  node: {
    workdir: '/',
    env: { NODE_VERSION: '24', YARN_VERSION: '1.22.22' },
    entrypoint: ['docker-entrypoint.sh'],
    cmd: ['node'],
  },
};

interface Instruction {
  op: string;
  args: string;
}

function instructions(text: string): Instruction[] {
  const out: Instruction[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\r$/, '');
    if (!pending && (/^\s*#/.test(line) || !line.trim())) continue;
    if (line.endsWith('\\')) {
      pending += line.slice(0, -1) + ' ';
      continue;
    }
    const full = (pending + line).trim();
    pending = '';
    if (/^\s*#/.test(full)) continue;
    const m = /^(\w+)\s+([\s\S]*)$/.exec(full);
    if (m) out.push({ op: m[1]!.toUpperCase(), args: m[2]! });
  }
  return out;
}

/** `KEY=value KEY2="two words"` (or the legacy `KEY value`) of an ENV or ARG instruction. */
function keyValues(args: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!args.includes('=')) {
    const [k, ...rest] = args.split(/\s+/);
    out[k!] = rest.join(' ');
    return out;
  }
  const re = /([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|'[^']*'|\S*)/g;
  for (const m of args.matchAll(re)) {
    let v = m[2]!;
    if ((v.startsWith('"') && v.endsWith('"')) || (v.startsWith("'") && v.endsWith("'"))) v = v.slice(1, -1);
    out[m[1]!] = v;
  }
  return out;
}

function expandArgs(value: string, vars: Record<string, string>): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (_m, a, b) => vars[a ?? b] ?? '');
}

/** The exec form (`["node", "x.js"]`) or the shell form (`/bin/sh -c "..."`) of CMD/ENTRYPOINT. */
function execForm(args: string): string[] {
  const trimmed = args.trim();
  if (trimmed.startsWith('[')) return JSON.parse(trimmed) as string[];
  return ['/bin/sh', '-c', trimmed];
}

/** Every stage of a Dockerfile with the configuration it inherits and sets, by stage name. */
export function dockerfileStages(file: string, buildArgs: Record<string, string> = {}): Map<string, ImageConfig> {
  const stages = new Map<string, ImageConfig>();
  const globalArgs: Record<string, string> = {};
  let current: ImageConfig | undefined;
  let cmdSet = false;
  for (const { op, args } of instructions(readFileSync(file, 'utf8'))) {
    if (op === 'ARG' && !current) {
      for (const [k, v] of Object.entries(keyValues(args))) globalArgs[k] = buildArgs[k] ?? v;
      continue;
    }
    if (op === 'FROM') {
      const m = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args.trim());
      if (!m) throw new Error(`Dockerfile: cannot read FROM ${args}`);
      const from = expandArgs(m[1]!, globalArgs);
      const name = m[2] ?? `stage-${stages.size}`;
      const parent = stages.get(from);
      const base = parent ?? BASE_IMAGES[from.split(/[:@]/)[0]!.split('/').pop()!];
      if (!base) throw new Error(`Dockerfile: stage ${name} starts from ${from}, whose configuration is unknown`);
      current = {
        stage: name,
        workdir: base.workdir,
        env: { ...base.env },
        entrypoint: [...base.entrypoint],
        cmd: [...base.cmd],
        ...(base.user ? { user: base.user } : {}),
        contextFiles: { ...(parent?.contextFiles ?? {}) },
        stageCopies: { ...(parent?.stageCopies ?? {}) },
        exposed: [...(parent?.exposed ?? [])],
      };
      cmdSet = false;
      stages.set(name, current);
      continue;
    }
    if (!current) continue;
    switch (op) {
      case 'WORKDIR':
        current.workdir = path.posix.resolve(current.workdir, args.trim());
        break;
      case 'ENV':
        Object.assign(current.env, Object.fromEntries(Object.entries(keyValues(args)).map(([k, v]) => [k, expandArgs(v, { ...globalArgs, ...current!.env })])));
        break;
      case 'ARG':
        break;
      case 'ENTRYPOINT':
        current.entrypoint = execForm(args);
        // An ENTRYPOINT resets an inherited CMD, as the builder does.
        if (!cmdSet) current.cmd = [];
        break;
      case 'CMD':
        current.cmd = execForm(args);
        cmdSet = true;
        break;
      case 'USER':
        current.user = args.trim();
        break;
      case 'EXPOSE':
        current.exposed.push(...args.trim().split(/\s+/).map((p) => Number(p.split('/')[0])));
        break;
      case 'COPY': {
        const parts = args.trim().split(/\s+/);
        const words = parts.filter((p) => !p.startsWith('--'));
        const dest = words[words.length - 1]!;
        const from = parts.find((p) => p.startsWith('--from='))?.slice(7);
        if (from) {
          if (words.length === 2) current.stageCopies[path.posix.resolve(current.workdir, dest)] = { from, path: words[0]! };
          break;
        }
        if (words.length === 2 && dest.startsWith('/')) current.contextFiles[dest] = words[0]!;
        break;
      }
      default:
        break;
    }
  }
  return stages;
}

// ---------------------------------------------------------------- the common shape

export interface HttpProbe {
  kind: 'http';
  path: string;
  port: number;
  initialDelaySeconds: number;
  periodSeconds: number;
  timeoutSeconds: number;
  failureThreshold: number;
}

export interface ExecProbe {
  kind: 'exec';
  command: string[];
  initialDelaySeconds: number;
  periodSeconds: number;
  timeoutSeconds: number;
  failureThreshold: number;
}

export type Probe = HttpProbe | ExecProbe;

/** A file placed in the container by a volume (ConfigMap, Secret, bind mount). */
export interface MountedFile {
  path: string;
  content: Buffer;
  mode: number;
  /** Where the kubelet takes it from (a Kubernetes ConfigMap or Secret volume). */
  source?: { kind: 'ConfigMap' | 'Secret'; name: string; key: string };
}

export interface Container {
  name: string;
  image: string;
  /** The command and its arguments after the engine combined the image's and the manifest's. */
  argv: string[];
  workdir: string;
  env: Record<string, string>;
  files: MountedFile[];
  /** Writable directories (emptyDir, volume claims, named volumes). */
  dirs: string[];
  /** Host files bound into the container (compose bind mounts): container path → repo path. */
  binds: Record<string, string>;
  /** The image's /app: a role tree (scripts/role-tree.mjs) the Dockerfile copies there, or the whole build. */
  appTree?: { role: string } | { build: true };
  uid?: number;
  gid?: number;
  readOnlyRootFilesystem: boolean;
  startup?: Probe;
  readiness?: Probe;
  liveness?: Probe;
  /** Container ports by name. */
  ports: Record<string, number>;
}

export interface Workload {
  source: string;
  kind: string;
  name: string;
  /** The pod's name as the downward API gives it. */
  podName: string;
  init: Container[];
  containers: Container[];
  /** Always (Deployments, StatefulSets, compose's restart policies) or never (one-shot jobs). */
  restart: boolean;
  /** Compose only: services this one waits for, with the condition. */
  dependsOn: { name: string; condition: string }[];
  /** Network names other workloads reach it by. */
  hostnames: string[];
  /**
   * The pod's own loopback address, for pods of one StatefulSet that listen on the same ports (a pod
   * has a network namespace of its own; here they share one): its names resolve to it and it binds
   * to it. Without one, 127.0.0.1.
   */
  address?: string;
}

/** What a stage has at /app: the role tree its COPY takes from the role-trees stage, else the whole build. */
function appTreeOf(stage: ImageConfig): Container['appTree'] {
  const copy = stage.stageCopies['/app'];
  const role = copy && /^\/trees\/([a-z-]+)\/?$/.exec(copy.path)?.[1];
  return role ? { role } : { build: true };
}

/** A Conveyor image reference → the Dockerfile stage it is built from, or undefined for third-party images. */
export function conveyorStage(image: string): string | undefined {
  const m = /(?:^|\/)conveyor\/([a-z0-9-]+)(?::[\w.-]+)?$/.exec(image);
  return m?.[1];
}

/** An image reference with an explicit tag (or digest), not an implied `latest`. */
export function hasTag(image: string): boolean {
  const last = image.split('/').pop()!;
  return image.includes('@sha256:') || (last.includes(':') && !last.endsWith(':latest'));
}

// ---------------------------------------------------------------- Kubernetes

export type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> }; [k: string]: any };

export function renderOverlay(dir: string): K8sObject[] {
  const out = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 << 20 });
  return parseAllDocuments(out)
    .map((d) => {
      if (d.errors.length) throw new Error(`${dir}: ${d.errors.map((e) => e.message).join('; ')}`);
      return d.toJS() as K8sObject;
    })
    .filter(Boolean);
}

/** Secrets an overlay expects to exist without generating them (prod): name → key → value. */
export type ProvidedSecrets = Record<string, Record<string, string>>;

export class ManifestError extends Error {}

/** `$(VAR)` as the kubelet expands it: defined names are replaced, `$$` escapes, unknown stay as written. */
export function expandKubeVars(value: string, defined: Record<string, string>): string {
  return value.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (m, name: string | undefined) => {
    if (m === '$$') return '$';
    return name !== undefined && name in defined ? defined[name]! : m;
  });
}

function secretData(o: K8sObject): Record<string, Buffer> {
  const out: Record<string, Buffer> = {};
  for (const [k, v] of Object.entries((o.data ?? {}) as Record<string, string>)) out[k] = Buffer.from(v.replace(/\s+/g, ''), 'base64');
  for (const [k, v] of Object.entries((o.stringData ?? {}) as Record<string, string>)) out[k] = Buffer.from(v);
  return out;
}

function configData(o: K8sObject): Record<string, Buffer> {
  const out: Record<string, Buffer> = {};
  for (const [k, v] of Object.entries((o.data ?? {}) as Record<string, string>)) out[k] = Buffer.from(v);
  for (const [k, v] of Object.entries((o.binaryData ?? {}) as Record<string, string>)) out[k] = Buffer.from(v, 'base64');
  return out;
}

function kubeProbe(p: any, ports: Record<string, number>): Probe | undefined {
  if (!p) return undefined;
  const timing = {
    initialDelaySeconds: p.initialDelaySeconds ?? 0,
    periodSeconds: p.periodSeconds ?? 10,
    timeoutSeconds: p.timeoutSeconds ?? 1,
    failureThreshold: p.failureThreshold ?? 3,
  };
  if (p.httpGet) {
    const port = typeof p.httpGet.port === 'number' ? p.httpGet.port : ports[p.httpGet.port];
    if (port === undefined) throw new ManifestError(`probe names port ${p.httpGet.port}, which the container does not declare`);
    return { kind: 'http', path: p.httpGet.path ?? '/', port, ...timing };
  }
  if (p.exec) return { kind: 'exec', command: p.exec.command, ...timing };
  if (p.tcpSocket) return { kind: 'exec', command: ['true'], ...timing };
  return undefined;
}

/**
 * Every pod-running object of a rendered overlay (Deployments, StatefulSets, Jobs) as workloads:
 * images resolved against the Dockerfile's stages, environment as the kubelet builds it (`envFrom`
 * in order, then `env`, with `$(VAR)` expansion and the downward API), ConfigMap and Secret volumes as
 * files. A reference to a missing ConfigMap, Secret or key is a ManifestError naming the workload,
 * unless it is optional.
 */
export function kubeWorkloads(source: string, objects: K8sObject[], stages: Map<string, ImageConfig>, provided: ProvidedSecrets = {}): Workload[] {
  const configMaps = new Map(objects.filter((o) => o.kind === 'ConfigMap').map((o) => [o.metadata.name, configData(o)]));
  const secrets = new Map(objects.filter((o) => o.kind === 'Secret').map((o) => [o.metadata.name, secretData(o)]));
  for (const [name, data] of Object.entries(provided)) {
    if (!secrets.has(name)) secrets.set(name, Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v)])));
  }
  const services = objects.filter((o) => o.kind === 'Service');
  const namespace = objects.find((o) => o.kind === 'Namespace')?.metadata.name ?? 'default';

  const out: Workload[] = [];
  for (const o of objects) {
    if (!['Deployment', 'StatefulSet', 'Job', 'DaemonSet'].includes(o.kind)) continue;
    const where = `${source} ${o.kind}/${o.metadata.name}`;
    const pod = o.spec.template.spec;
    const podLabels: Record<string, string> = o.spec.template.metadata?.labels ?? {};
    // A StatefulSet's pods each have an identity (name, stable DNS name, volume) the others reach them
    // by, as a cluster's nodes do: every one is a workload. A Deployment's replicas are alike: one.
    const ordinals = o.kind === 'StatefulSet' ? Array.from({ length: o.spec.replicas ?? 1 }, (_, i) => i) : [undefined];
    for (const ordinal of ordinals) {
      const podName = ordinal !== undefined ? `${o.metadata.name}-${ordinal}` : `${o.metadata.name}-conformance`;
      const lookup = (kind: 'ConfigMap' | 'Secret', name: string, key: string | undefined, optional: boolean | undefined): Buffer | Record<string, Buffer> | undefined => {
        const store = kind === 'ConfigMap' ? configMaps : secrets;
        const data = store.get(name);
        if (!data) {
          if (optional) return undefined;
          throw new ManifestError(`${where}: ${kind} ${name} does not exist`);
        }
        if (key === undefined) return data;
        if (!(key in data)) {
          if (optional) return undefined;
          throw new ManifestError(`${where}: ${kind} ${name} has no key ${key}`);
        }
        return data[key];
      };

      const container = (c: any): Container => {
        const stageName = conveyorStage(c.image);
        const stage = stageName ? stages.get(stageName) : undefined;
        if (stageName && !stage) throw new ManifestError(`${where}: image ${c.image} names Dockerfile stage ${stageName}, which does not exist`);
        const ports: Record<string, number> = {};
        for (const p of c.ports ?? []) if (p.name) ports[p.name] = p.containerPort;
        const env: Record<string, string> = { ...(stage?.env ?? {}) };
        for (const from of c.envFrom ?? []) {
          const ref = from.configMapRef ?? from.secretRef;
          const data = lookup(from.configMapRef ? 'ConfigMap' : 'Secret', ref.name, undefined, ref.optional) as Record<string, Buffer> | undefined;
          for (const [k, v] of Object.entries(data ?? {})) env[(from.prefix ?? '') + k] = v.toString();
        }
        for (const e of c.env ?? []) {
          if (e.value !== undefined || !e.valueFrom) {
            env[e.name] = expandKubeVars(String(e.value ?? ''), env);
            continue;
          }
          const vf = e.valueFrom;
          if (vf.fieldRef) {
            const field: string = vf.fieldRef.fieldPath;
            const value = field === 'metadata.name' ? podName : field === 'metadata.namespace' ? namespace : field.startsWith('metadata.labels[') ? podLabels[field.slice(17, -2)] : undefined;
            if (value === undefined) throw new ManifestError(`${where}: ${e.name} reads field ${field}, which this suite does not resolve`);
            env[e.name] = value;
            continue;
          }
          const ref = vf.configMapKeyRef ?? vf.secretKeyRef;
          if (!ref) throw new ManifestError(`${where}: ${e.name} has a valueFrom this suite does not resolve`);
          const value = lookup(vf.configMapKeyRef ? 'ConfigMap' : 'Secret', ref.name, ref.key, ref.optional) as Buffer | undefined;
          if (value !== undefined) env[e.name] = value.toString();
        }
        const files: MountedFile[] = [];
        const dirs: string[] = [];
        for (const m of c.volumeMounts ?? []) {
          const volume = (pod.volumes ?? []).find((v: any) => v.name === m.name);
          const claim = (o.spec.volumeClaimTemplates ?? []).find((t: any) => t.metadata.name === m.name);
          if (!volume && !claim) throw new ManifestError(`${where}: container ${c.name} mounts volume ${m.name}, which the pod does not declare`);
          if (claim || volume.emptyDir || volume.persistentVolumeClaim) {
            dirs.push(m.mountPath);
            continue;
          }
          const source = volume.configMap ?? volume.secret;
          if (!source) throw new ManifestError(`${where}: volume ${m.name} is of a type this suite does not mount`);
          const kind = volume.configMap ? 'ConfigMap' : 'Secret';
          const data = lookup(kind, source.name ?? source.secretName, undefined, source.optional) as Record<string, Buffer> | undefined;
          const mode = source.defaultMode ?? 0o644;
          const items: { key: string; path: string; mode?: number }[] = source.items ?? Object.keys(data ?? {}).map((k) => ({ key: k, path: k }));
          for (const item of items) {
            if (data && !(item.key in data)) throw new ManifestError(`${where}: ${kind} ${source.name ?? source.secretName} has no key ${item.key} (volume ${m.name})`);
            if (!data) continue;
            const full = path.posix.join(m.mountPath, item.path);
            if (m.subPath && m.subPath !== item.path) continue;
            files.push({ path: m.subPath ? m.mountPath : full, content: data[item.key]!, mode: item.mode ?? mode, source: { kind, name: source.name ?? source.secretName, key: item.key } });
          }
        }
        const mounted = (c.volumeMounts ?? []).map((m: any) => m.mountPath as string);
        const imageFiles = Object.entries(stage?.contextFiles ?? {}).filter(([p]) => !mounted.some((m: string) => p === m || p.startsWith(m + '/')));
        const security = { ...(pod.securityContext ?? {}), ...(c.securityContext ?? {}) };
        const entrypoint = c.command ?? stage?.entrypoint ?? [];
        const cmd = c.command ? (c.args ?? []) : (c.args ?? stage?.cmd ?? []);
        const argv = [...entrypoint, ...cmd].map((a: string) => expandKubeVars(a, env));
        return {
          name: c.name,
          image: c.image,
          argv,
          workdir: c.workingDir ?? stage?.workdir ?? '/',
          env,
          files,
          dirs,
          binds: Object.fromEntries(imageFiles),
          ...(stage ? { appTree: appTreeOf(stage) } : {}),
          ...(security.runAsUser !== undefined ? { uid: security.runAsUser } : {}),
          ...(security.runAsGroup !== undefined ? { gid: security.runAsGroup } : {}),
          readOnlyRootFilesystem: security.readOnlyRootFilesystem === true,
          ...(kubeProbe(c.startupProbe, ports) ? { startup: kubeProbe(c.startupProbe, ports)! } : {}),
          ...(kubeProbe(c.readinessProbe, ports) ? { readiness: kubeProbe(c.readinessProbe, ports)! } : {}),
          ...(kubeProbe(c.livenessProbe, ports) ? { liveness: kubeProbe(c.livenessProbe, ports)! } : {}),
          ports,
        };
      };

      // A Service selecting these pods: its names (short and cluster DNS forms) reach them.
      const hostnames: string[] = [];
      for (const s of services) {
        const sel: Record<string, string> = s.spec.selector ?? {};
        if (!Object.keys(sel).length || !Object.entries(sel).every(([k, v]) => podLabels[k] === v)) continue;
        const n = s.metadata.name;
        hostnames.push(n, `${n}.${namespace}`, `${n}.${namespace}.svc`, `${n}.${namespace}.svc.cluster.local`);
        // The StatefulSet's governing headless Service names each pod: <pod>.<service>[.<ns>.svc.cluster.local].
        if (ordinal !== undefined && s.spec.clusterIP === 'None' && o.spec.serviceName === n) {
          hostnames.push(`${podName}.${n}`, `${podName}.${n}.${namespace}`, `${podName}.${n}.${namespace}.svc`, `${podName}.${n}.${namespace}.svc.cluster.local`);
        }
        for (const p of s.spec.ports ?? []) {
          const containerPorts = (pod.containers as any[]).flatMap((c) => c.ports ?? []);
          const target = typeof p.targetPort === 'string' ? containerPorts.find((cp: any) => cp.name === p.targetPort)?.containerPort : (p.targetPort ?? p.port);
          if (target === undefined) throw new ManifestError(`${source} Service/${n}: targetPort ${p.targetPort} is not a port of ${o.metadata.name}`);
          if (target !== p.port) throw new ManifestError(`${source} Service/${n}: port ${p.port} → ${target}; this suite runs pods on one network and needs them equal`);
        }
      }
      out.push({
        source,
        kind: o.kind,
        name: ordinals.length > 1 ? podName : o.metadata.name,
        podName,
        init: (pod.initContainers ?? []).map(container),
        containers: (pod.containers ?? []).map(container),
        restart: o.kind !== 'Job',
        dependsOn: [],
        hostnames,
        ...(ordinals.length > 1 ? { address: `127.0.1.${out.filter((w) => w.address).length + 1}` } : {}),
      });
    }
  }
  return out;
}

// ---------------------------------------------------------------- compose

/** `docker-compose config` of a file: interpolated, defaults applied, anchors merged. */
export function composeConfig(file: string, projectDir: string, env: Record<string, string>, profiles: string[] = []): any {
  const out = execFileSync('docker-compose', ['-f', file, '--project-directory', projectDir, ...profiles.flatMap((p) => ['--profile', p]), 'config'], {
    cwd: projectDir,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return parseYaml(out);
}

function seconds(value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(String(value));
  if (!m) return fallback;
  const n = Number(m[1]);
  return m[2] === 'ms' ? n / 1000 : m[2] === 'm' ? n * 60 : m[2] === 'h' ? n * 3600 : n;
}

/** compose's command string or list, as the engine splits it (no shell). */
function composeArgs(value: unknown): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (Array.isArray(value)) return value.map(String);
  return String(value).match(/"[^"]*"|'[^']*'|\S+/g)!.map((w) => w.replace(/^["']|["']$/g, ''));
}

/** Every service of a rendered compose file as a workload. */
export function composeWorkloads(config: any, projectDir: string, stages: Map<string, ImageConfig>): Workload[] {
  const out: Workload[] = [];
  for (const [name, svc] of Object.entries<any>(config.services ?? {})) {
    const stageName = svc.build?.target as string | undefined;
    const stage = stageName ? stages.get(stageName) : undefined;
    if (stageName && !stage) throw new ManifestError(`compose ${name}: builds Dockerfile stage ${stageName}, which does not exist`);
    const env: Record<string, string> = { ...(stage?.env ?? {}) };
    for (const [k, v] of Object.entries<any>(svc.environment ?? {})) env[k] = v === null || v === undefined ? '' : String(v);
    const binds: Record<string, string> = {};
    const dirs: string[] = [];
    for (const v of svc.volumes ?? []) {
      // `config` writes the short syntax: /abs/source:/target[:mode] for binds, name:/target[:mode] for volumes.
      const [source, target] = typeof v === 'string' ? v.split(':') : [v.source, v.target];
      if (!source || !target) throw new ManifestError(`compose ${name}: cannot read volume ${JSON.stringify(v)}`);
      if (source.startsWith('/') || source.startsWith('.')) binds[target] = path.relative(projectDir, path.resolve(projectDir, source));
      else dirs.push(target);
    }
    const hc = svc.healthcheck;
    let readiness: Probe | undefined;
    if (hc && !hc.disable) {
      const test: string[] = Array.isArray(hc.test) ? hc.test : ['CMD-SHELL', hc.test];
      const command = test[0] === 'CMD-SHELL' ? ['/bin/sh', '-c', test.slice(1).join(' ')] : test.slice(1);
      const interval = seconds(hc.interval, 30);
      // Failures inside start_period do not count: it lengthens the budget rather than delaying the first check.
      readiness = {
        kind: 'exec',
        command,
        initialDelaySeconds: 0,
        periodSeconds: interval,
        timeoutSeconds: seconds(hc.timeout, 30),
        failureThreshold: (hc.retries ?? 3) + Math.ceil(seconds(hc.start_period, 0) / interval),
      };
    }
    const entrypoint = composeArgs(svc.entrypoint) ?? stage?.entrypoint ?? [];
    const cmd = composeArgs(svc.command) ?? (svc.entrypoint !== undefined ? [] : (stage?.cmd ?? []));
    const user = (svc.user ?? stage?.user) as string | undefined;
    const [uid, gid] = user ? user.split(':').map(Number) : [];
    const ports: Record<string, number> = {};
    for (const p of [...(svc.expose ?? []), ...(svc.ports ?? []).map((x: any) => x.target ?? x)]) ports[String(p)] = Number(String(p).split(/[:/]/)[0]);
    const aliases = Object.values<any>(svc.networks ?? {}).flatMap((n) => n?.aliases ?? []);
    out.push({
      source: 'compose',
      kind: 'service',
      name,
      podName: `${name}-1`,
      init: [],
      containers: [
        {
          name,
          image: svc.image ?? `conveyor/${stageName}`,
          argv: [...entrypoint, ...cmd],
          workdir: svc.working_dir ?? stage?.workdir ?? '/',
          env,
          files: [],
          dirs,
          binds: { ...Object.fromEntries(Object.entries(stage?.contextFiles ?? {})), ...binds },
          ...(stage ? { appTree: appTreeOf(stage) } : {}),
          ...(uid !== undefined && !Number.isNaN(uid) ? { uid } : {}),
          ...(gid !== undefined && !Number.isNaN(gid) ? { gid } : {}),
          readOnlyRootFilesystem: svc.read_only === true,
          ...(readiness ? { readiness } : {}),
          ports,
        },
      ],
      restart: svc.restart !== 'no' && svc.restart !== undefined,
      dependsOn: Object.entries<any>(svc.depends_on ?? {}).map(([dep, d]) => ({ name: dep, condition: d?.condition ?? 'service_started' })),
      hostnames: [name, ...aliases],
    });
  }
  return out;
}
