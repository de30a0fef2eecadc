import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../harness/ports.js';
import { waitUntil } from '../harness/wait.js';
import { natsServerConfig, passwordVariable, pluginPasswordVariable, pluginUser, SERVICE_ROLES, type NatsAccountRole, type NatsConfigOptions } from './nats-config.js';

export const NATS_SERVER_BIN = process.env.NATS_SERVER_BIN ?? '/usr/sbin/nats-server';

export interface SecuredNats {
  url: string;
  monitorUrl: string;
  prefix: string;
  passwords: Record<NatsAccountRole, string>;
  /** NATS_USER/NATS_PASSWORD (as files, as a Secret mount would give them) for a role. */
  credentialsEnv(role: NatsAccountRole): Promise<NodeJS.ProcessEnv>;
  /** The user and password of a plugin given an identity of its own (`options.plugins`). */
  pluginCredentials(name: string): { user: string; password: string };
  logs: string[];
  stop(): Promise<void>;
}

/**
 * A private nats-server (Debian's 2.9.10) on free ports, with the generated per-service config for
 * `prefix` and random passwords passed the way the deployments pass them: in the server's environment.
 */
export async function startSecuredNats(prefix: string, options: Pick<NatsConfigOptions, 'plugins' | 'sharedPluginUser'> = {}): Promise<SecuredNats> {
  const dir = await mkdtemp(path.join(tmpdir(), 'conveyor-nats-'));
  const port = await freePort();
  let monitorPort = await freePort();
  while (monitorPort === port) monitorPort = await freePort();
  const conf = path.join(dir, 'nats.conf');
  await writeFile(conf, natsServerConfig({ prefix, port, monitorPort, storeDir: path.join(dir, 'js'), ...options }));
  const passwords = Object.fromEntries([...SERVICE_ROLES, 'plugin' as const, 'ops' as const].map((r) => [r, 'p' + randomBytes(12).toString('hex')])) as SecuredNats['passwords'];
  const pluginPasswords = new Map((options.plugins ?? []).map((name) => [name, 'p' + randomBytes(12).toString('hex')]));
  const env = {
    PATH: process.env.PATH,
    ...Object.fromEntries(Object.entries(passwords).map(([r, p]) => [passwordVariable(r as NatsAccountRole), p])),
    ...Object.fromEntries([...pluginPasswords].map(([name, p]) => [pluginPasswordVariable(name), p])),
  };
  const child: ChildProcess = spawn(NATS_SERVER_BIN, ['-c', conf, '-a', '127.0.0.1'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: string[] = [];
  const collect = (d: Buffer) => logs.push(...d.toString().split('\n').filter(Boolean));
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const monitorUrl = `http://127.0.0.1:${monitorPort}`;
  await waitUntil('secured nats-server up', async () => {
    if (child.exitCode !== null) throw new Error(`nats-server exited ${child.exitCode}:\n${logs.join('\n')}`);
    const res = await fetch(`${monitorUrl}/healthz?js-enabled-only=true`).catch(() => undefined);
    return res?.status === 200;
  }, 15_000, 100);
  return {
    url: `nats://127.0.0.1:${port}`,
    monitorUrl,
    prefix,
    passwords,
    logs,
    async credentialsEnv(role) {
      const file = path.join(dir, `${role}.password`);
      await writeFile(file, passwords[role] + '\n', { mode: 0o600 });
      return { NATS_USER: role, NATS_PASSWORD_FILE: file };
    },
    pluginCredentials(name) {
      const password = pluginPasswords.get(name);
      if (!password) throw new Error(`plugin ${name} has no user of its own in this server's config`);
      return { user: pluginUser(name), password };
    },
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(t);
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
