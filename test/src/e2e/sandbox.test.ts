import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { redisKeys, type RunRequest, type SandboxBinding } from '@conveyor/contracts';
import { SandboxWorkspaceStore, SkillStore, createDatabase, closeDatabase, type Database } from '@conveyor/persistence';
import { skillFromFiles } from '@conveyor/sandbox/skills';
import { Redis } from 'ioredis';
import { startTestSystem, REDIS_URL, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';
import { RunPublisher, repliesTo, replyText } from './runner-support.js';

/** A uid of this file's own, so a fork bomb here counts against no other test's processes. */
const RUN_AS = String(61_000 + Math.floor(Math.random() * 3_000));

const SANDBOX_ENV = {
  SANDBOX_RUN_AS_UID: RUN_AS,
  SANDBOX_RUN_AS_GID: RUN_AS,
  SANDBOX_CPU_SECONDS: '2',
  SANDBOX_MEMORY_MB: '2048',
  SANDBOX_PROCESSES: '64',
  SANDBOX_FILE_MB: '8',
  SANDBOX_WORKSPACE_MAX_BYTES: String(20 * 1024 * 1024),
  SANDBOX_LEASE_TTL_MS: '2000',
  SANDBOX_LEASE_WAIT_MS: '30000',
};

interface Call {
  name: string;
  args: Record<string, unknown>;
}

/**
 * The agent's sandbox through real processes: a runner asks sandbox replicas over NATS, each command
 * runs under bubblewrap, workspaces live in Postgres. Every tool call comes from the fake model, as
 * a model would make it; the assertions read what the model got back.
 */
describe('the sandbox role', () => {
  let sys: TestSystem;
  let runs: RunPublisher;
  let db: Database;
  let redis: Redis;
  let listener: Server;
  let listenerPort = 0;
  let connections = 0;

  before(async () => {
    sys = await startTestSystem({ startServices: false });
    db = createDatabase(sys.db.url, 2);
    redis = new Redis(REDIS_URL);
    listener = createServer((socket) => {
      connections += 1;
      socket.end('hello from the host\n');
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    listenerPort = (listener.address() as { port: number }).port;
    const skill = await skillFromFiles(new Map([
      ['SKILL.md', Buffer.from('---\nname: number-sum\ndescription: Adds numbers exactly. Use it when the user asks for a sum.\n---\nRun `python3 /skills/number-sum/sum.py <numbers>` and report its output.\n')],
      ['sum.py', Buffer.from('import sys\nprint(sum(int(a) for a in sys.argv[1:]))\n')],
    ]));
    await new SkillStore(db).install({ ...skill, managedBy: 'console' });
    await Promise.all([
      sys.services.start('dispatcher'),
      sys.services.start('runner', { SANDBOX_CALL_OVERHEAD_MS: '8000' }),
      sys.services.start('sandbox', SANDBOX_ENV, 'sandbox-a'),
    ]);
    runs = await RunPublisher.open(sys);
  });
  after(async () => {
    await runs?.close();
    await sys?.stop();
    await closeDatabase(db);
    redis?.disconnect();
    listener?.close();
  });

  const binding = (workspace: string, more: Partial<SandboxBinding> = {}): SandboxBinding => ({ workspace: `${sys.topology.prefix}/${workspace}`, network: false, skills: 'all', ...more });

  /** One model turn calling these tools, then an answer; returns what each tool call gave the model. */
  async function toolResults(sandbox: SandboxBinding, calls: Call[], overrides: Partial<RunRequest> = {}): Promise<string[]> {
    sys.llm.script({ toolCalls: calls.map((c) => ({ name: c.name, arguments: JSON.stringify(c.args) })) }, { text: 'done' });
    const run = await runs.publish(runs.request({ sandbox, ...overrides }));
    const replies = await sys.callbacks.waitFor((all) => repliesTo(all, run).some((c) => c.json.is_final), 120_000).then((all) => repliesTo(all, run));
    assert.equal(replies.filter((c) => c.json.is_final).length, 1, 'exactly one final reply');
    assert.equal(replyText(replies.find((c) => c.json.is_final)!), 'done');
    const messages = sys.llm.requests.at(-1)!.body.messages!;
    return messages.filter((m) => m.role === 'tool').map((m) => toolText(m.content));
  }

  const exec = (command: string, more: Record<string, unknown> = {}): Call => ({ name: 'exec', args: { command, ...more } });

  test('exec runs Python and Node, and the model is offered the six tools with the sandbox guidance', async () => {
    const [out] = await toolResults(binding('basic'), [exec('python3 -c "print(6*7)"; node -e "console.log(\'node\', 1+1)"; id -u')]);
    assert.match(out!, /^exit code: 0/);
    assert.match(out!, /42\nnode 2\n1000/);
    const first = sys.llm.requests.at(-2)!.body;
    const offered = (first.tools as { function: { name: string } }[]).map((t) => t.function.name);
    assert.deepEqual(offered, ['exec', 'read', 'write', 'edit', 'glob', 'grep', 'activate']);
    const system = first.messages!.filter((m) => m.role === 'system').map((m) => String(m.content)).join('\n');
    assert.match(system, /You have a sandbox/);
    assert.match(system, /Commands have no network access/);
  });

  test('files written by one call are there for the next; write, edit, read, glob and grep work on them', async () => {
    const results = await toolResults(binding('files'), [
      { name: 'write', args: { path: '/workspace/notes/a.txt', content: 'alpha\nbeta\n' } },
      { name: 'edit', args: { path: 'notes/a.txt', old_string: 'beta', new_string: 'gamma' } },
      exec('cat notes/a.txt | tr a-z A-Z > notes/b.txt'),
      { name: 'read', args: { path: '/workspace/notes/b.txt' } },
      { name: 'glob', args: { pattern: '**/*.txt' } },
      { name: 'grep', args: { pattern: 'gam+a', include: '*.txt' } },
    ]);
    assert.match(results[0]!, /wrote 11 bytes to \/workspace\/notes\/a.txt/);
    assert.match(results[1]!, /edited/);
    assert.equal(results[3], 'ALPHA\nGAMMA');
    assert.equal(results[4], '/workspace/notes/a.txt\n/workspace/notes/b.txt');
    assert.equal(results[5], '/workspace/notes/a.txt:2: gamma');
    const [later] = await toolResults(binding('files'), [exec('cat notes/a.txt')]);
    assert.match(later!, /alpha\ngamma/);
  });

  test('host files are out of reach: paths outside the workspace, and links out of it, are refused', async () => {
    const results = await toolResults(binding('escape-files'), [
      { name: 'read', args: { path: '/etc/passwd' } },
      { name: 'read', args: { path: '../../../etc/passwd' } },
      exec(`cat /etc/passwd; ls ${process.cwd()}; ls /root`),
      exec('ln -s /etc/passwd /workspace/passwd && ln -s / /workspace/root && echo linked'),
      { name: 'read', args: { path: '/workspace/passwd' } },
      { name: 'write', args: { path: '/workspace/root/tmp/owned', content: 'x' } },
      { name: 'write', args: { path: '/skills/anything/x', content: 'x' } },
    ]);
    assert.match(results[0]!, /^err: refused: .*escapes the workspace/);
    assert.match(results[1]!, /^err: refused: .*escapes the workspace/);
    assert.doesNotMatch(results[2]!, /root:x:0:0/);
    assert.match(results[2]!, /No such file or directory/);
    assert.match(results[3]!, /linked/);
    assert.match(results[4]!, /^err: refused: .*symbolic link/);
    assert.match(results[5]!, /^err: refused: .*symbolic link/);
    assert.match(results[6]!, /^err: refused/);
  });

  test('no network unless the pipeline allows it', async () => {
    const probe = `python3 -c "import socket; s=socket.create_connection(('127.0.0.1', ${listenerPort}), 3); print(s.recv(100).decode())"`;
    const before = connections;
    const [off] = await toolResults(binding('net-off'), [exec(probe)]);
    assert.doesNotMatch(off!, /^exit code: 0/);
    assert.match(off!, /Network is unreachable|Connection refused/);
    assert.equal(connections, before, 'nothing reached the host');
    const [on] = await toolResults(binding('net-on', { network: true }), [exec(probe)]);
    assert.match(on!, /^exit code: 0/);
    assert.match(on!, /hello from the host/);
    assert.equal(connections, before + 1);
  });

  test('a fork bomb, a memory hog, an endless loop and a huge file are stopped, and the workspace goes on', async () => {
    const results = await toolResults(binding('abuse'), [
      exec('bomb() { bomb | bomb & }; bomb; sleep 3; echo after-the-bomb', { timeout_sec: 20 }),
      exec('python3 -c "x = bytearray(3 * 1024 * 1024 * 1024)"'),
      exec('while true; do :; done', { timeout_sec: 30 }),
      exec('sleep 60', { timeout_sec: 2 }),
      exec('dd if=/dev/zero of=big bs=1M count=100 2>&1; ls -l big'),
      exec('echo still-working'),
    ]);
    assert.match(results[0]!, /limits reached: .*processes/, results[0]);
    assert.match(results[1]!, /limits reached: .*memory/, results[1]);
    assert.match(results[2]!, /limits reached: .*cpu_time/, results[2]);
    assert.match(results[3]!, /limits reached: .*wall_time/, results[3]);
    assert.match(results[4]!, /limits reached: .*file_size/, results[4]);
    assert.match(results[4]!, / 8388608 /, 'the file stopped at the file size bound');
    assert.match(results[5]!, /^exit code: 0[\s\S]*still-working/);
    const metrics = await (await fetch(`${sys.services.get('sandbox-a').url}/metrics`)).text();
    for (const limit of ['processes', 'memory', 'cpu_time', 'wall_time', 'file_size']) {
      assert.match(metrics, new RegExp(`conveyor_sandbox_limits_hit_total\\{[^}]*limit="${limit}"`), `a metric for ${limit}`);
    }
  });

  test('a workspace that grows past its cap has that call undone; the earlier files stay', async () => {
    const results = await toolResults(binding('cap'), [
      exec('echo keep > kept.txt'),
      exec('for i in 1 2 3; do head -c 7000000 /dev/zero > fill-$i; done; echo filled'),
      exec('ls -I outbox'),
    ]);
    assert.match(results[1]!, /^err: limit: the workspace grew to \d+ bytes/);
    assert.equal(results[2]!.split('stdout:\n')[1]!.split('\nstderr:')[0], 'kept.txt\n');
  });

  test('two replicas serve one workspace in turn: the second unpacks what the first stored', async () => {
    const ws = binding('replicas');
    await toolResults(ws, [exec('echo from-a >> log.txt')]);
    await sys.services.start('sandbox', SANDBOX_ENV, 'sandbox-b');
    await sys.services.kill('sandbox-a');
    const [out] = await toolResults(ws, [exec('echo from-b >> log.txt; cat log.txt')]);
    assert.match(out!, /from-a\nfrom-b/);
    const metrics = await (await fetch(`${sys.services.get('sandbox-b').url}/metrics`)).text();
    assert.match(metrics, /conveyor_sandbox_workspace_restores_total\S* [1-9]/);
    const stored = await new SandboxWorkspaceStore(db).get(ws.workspace);
    assert.ok(stored && stored.revision > 1, 'each replica stored what its call changed');
    await sys.services.start('sandbox', SANDBOX_ENV, 'sandbox-a');
  });

  test('a replica killed mid-command: the model gets a clear tool error, the run ends with one reply, the workspace keeps its last state', async () => {
    const ws = binding('killed');
    await toolResults(ws, [exec('echo before > state.txt')]);
    await sys.services.kill('sandbox-b');
    // Only sandbox-a serves now; the command below is killed with it.
    const lease = redisKeys(sys.topology.prefix).sandboxWorkspaceLease(ws.workspace);
    const pending = toolResults(ws, [exec('echo half > state.txt; sleep 30', { timeout_sec: 15 })]);
    await waitUntil('the command holds its workspace', async () => (await redis.exists(lease)) === 1, 60_000, 50);
    await sys.services.kill('sandbox-a');
    await sys.services.start('sandbox', SANDBOX_ENV, 'sandbox-b');
    const [killed] = await pending;
    assert.match(killed!, /^err: the sandbox did not answer within \d+ s \(its replica may have stopped mid-call\)/);
    const [after] = await toolResults(ws, [exec('cat state.txt')]);
    assert.match(after!, /^exit code: 0[\s\S]*stdout:\nbefore\n/);
  });

  test('a skill is listed by name and description, activated, and its script runs from /skills', async () => {
    const results = await toolResults(binding('skills'), [
      { name: 'activate', args: { skill_name: 'number-sum' } },
      exec('python3 /skills/number-sum/sum.py 19 23'),
      { name: 'read', args: { path: '/skills/number-sum/sum.py' } },
      exec('echo x > /skills/number-sum/sum.py'),
      { name: 'activate', args: { skill_name: 'no-such-skill' } },
    ]);
    assert.match(results[0]!, /# Skill: number-sum[\s\S]*python3 \/skills\/number-sum\/sum.py/);
    assert.match(results[1]!, /^exit code: 0[\s\S]*stdout:\n42\n/);
    assert.match(results[2]!, /import sys/);
    assert.match(results[3]!, /Read-only file system/);
    assert.match(results[4]!, /^err: no skill named "no-such-skill"/);
    const first = sys.llm.requests.at(-2)!.body;
    assert.ok((first.tools as { function: { name: string } }[]).some((t) => t.function.name === 'activate'));
    const system = first.messages!.filter((m) => m.role === 'system').map((m) => String(m.content)).join('\n');
    assert.match(system, /- number-sum: Adds numbers exactly/);
    assert.doesNotMatch(system, /sum\.py/, 'instructions stay hidden until the skill is activated');
  });

  test('a pipeline that binds no skills offers no activate tool', async () => {
    sys.llm.script({ text: 'ok' });
    const run = await runs.publish(runs.request({ sandbox: binding('no-skills', { skills: [] }) }));
    await sys.callbacks.waitFor((all) => repliesTo(all, run).some((c) => c.json.is_final), 60_000);
    const offered = (sys.llm.requests.at(-1)!.body.tools as { function: { name: string } }[]).map((t) => t.function.name);
    assert.ok(!offered.includes('activate'), offered.join(','));
  });
});

function toolText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p: { text?: string }) => p.text ?? '').join('');
  return JSON.stringify(content);
}
