import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SandboxReply, SandboxRequestInput } from '@conveyor/contracts';
import { ContentResult } from './tools.js';
import { mergeToolBoxes, redactCommand, sandboxTools, type SkillCatalog } from './sandbox-tools.js';

/** Records what the tools ask and answers like the sandbox role would. */
function recordingPort(answer: (input: SandboxRequestInput) => SandboxReply) {
  const asked: SandboxRequestInput[] = [];
  return { asked, port: { call: async (input: SandboxRequestInput) => (asked.push(input), answer(input)) } };
}

const skills: SkillCatalog = {
  list: async (bound) => [{ name: 'pdf', description: 'Works with PDFs.', revision: 3 }].filter((s) => bound === 'all' || bound.includes(s.name)),
  instructions: async (name) => (name === 'pdf' ? { name, description: 'Works with PDFs.', revision: 3, instructions: 'Run extract.py.' } : undefined),
};

const binding = { workspace: 'p1/bot/person_u1', network: false, skills: 'all' as const };
const ok = (more: Partial<Extract<SandboxReply, { ok: true }>> = {}): SandboxReply => ({ v: 1, ok: true, revision: 1, ...more });

test("the model's arguments become sandbox operations with LangBot's names; a bad argument is the model's error", async () => {
  const { asked, port } = recordingPort(() => ok({ text: 'fine' }));
  const { box } = await sandboxTools({ port, binding, queryId: 'q1', skills });
  await box.call('exec', { command: 'ls', timeout_sec: 5, description: 'list', env: { A: 'b' } });
  await box.call('edit', { path: 'a.txt', old_string: 'x', new_string: 'y' });
  await box.call('read', { path: 'a.txt', offset: null });
  assert.deepEqual(asked.map((a) => a.call), [
    { op: 'exec', command: 'ls', timeoutSec: 5, env: { A: 'b' }, workdir: '/workspace' },
    { op: 'edit', path: 'a.txt', oldString: 'x', newString: 'y' },
    { op: 'read', path: 'a.txt', offset: 1, limit: 2000 },
  ]);
  assert.equal(asked[0]!.workspace, 'p1/bot/person_u1');
  await assert.rejects(box.call('exec', { command: 'x', timeout_sec: 100_000 }), /invalid arguments for exec: timeoutSec/);
  await assert.rejects(box.call('write', { content: 'no path' }), /invalid arguments for write: path/);
  await assert.rejects(box.call('rm', {}), /Tool not found: rm/);
});

test('a refusal reaches the model as the code and the reason; exec output is described with its exit code', async () => {
  const { port } = recordingPort((input) => input.call.op === 'read'
    ? { v: 1, ok: false, code: 'refused', error: '/etc/passwd: path escapes the workspace boundary' }
    : ok({ exec: { exitCode: 3, signal: null, stdout: 'out', stderr: 'err', durationMs: 12.4, outputBytes: 6, limits: ['wall_time'] } }));
  const records: unknown[] = [];
  const { box } = await sandboxTools({ port, binding, queryId: 'q1', skills, onExec: (r) => records.push(r) });
  await assert.rejects(box.call('read', { path: '/etc/passwd' }), /^Error: refused: \/etc\/passwd: path escapes/);
  const result = await box.call('exec', { command: 'API_KEY=sk-123 run', env: { TOKEN: 'secret-value' } });
  assert.ok(result instanceof ContentResult);
  assert.equal((result.parts[0] as { text: string }).text, 'exit code: 3, 12 ms\nlimits reached: wall_time\nstdout:\nout\nstderr:\nerr');
  assert.equal(JSON.stringify(records).includes('sk-123') || JSON.stringify(records).includes('secret-value'), false, 'no secret in the timeline');
});

test('skills: listed by name and description only; activate returns the instructions and mounts the skill for later calls', async () => {
  const { asked, port } = recordingPort(() => ok({ text: '' }));
  const { box, guidance } = await sandboxTools({ port, binding, queryId: 'q1', skills });
  assert.match(guidance, /- pdf: Works with PDFs\./);
  assert.doesNotMatch(guidance, /extract\.py/);
  assert.deepEqual(box.definitions().map((d) => d.function.name), ['exec', 'read', 'write', 'edit', 'glob', 'grep', 'activate']);
  await box.call('glob', { pattern: '*' });
  const activated = await box.call('activate', { skill_name: 'pdf' });
  assert.match(JSON.stringify(activated), /Run extract.py/);
  await box.call('glob', { pattern: '*' });
  assert.deepEqual(asked.map((a) => a.skills), [[], [{ name: 'pdf', revision: 3 }]]);
  await assert.rejects(box.call('activate', { skill_name: 'nope' }), /no skill named "nope"/);
  const none = await sandboxTools({ port, binding: { ...binding, skills: [] }, queryId: 'q1', skills });
  assert.ok(!none.box.definitions().some((d) => d.function.name === 'activate'));
  await assert.rejects(none.box.call('activate', { skill_name: 'pdf' }), /Tool not found/);
});

test('credentials in a command are masked before it is shown anywhere', () => {
  assert.equal(redactCommand('OPENAI_API_KEY=sk-abc python x.py'), 'OPENAI_API_KEY=*** python x.py');
  assert.equal(redactCommand('curl -H "Authorization: Bearer abc.def" u'), 'curl -H "Authorization: Bearer *** u');
  assert.equal(redactCommand('echo hi'), 'echo hi');
});

test('merged tool boxes route a call to the first box offering the name', async () => {
  const a = { definitions: () => [{ type: 'function' as const, function: { name: 'x', parameters: {} } }], call: async () => 'from a' };
  const b = { definitions: () => [{ type: 'function' as const, function: { name: 'x', parameters: {} } }, { type: 'function' as const, function: { name: 'y', parameters: {} } }], call: async () => 'from b' };
  const merged = mergeToolBoxes(a, b);
  assert.equal(await merged.call('x', {}), 'from a');
  assert.equal(await merged.call('y', {}), 'from b');
  await assert.rejects(merged.call('z', {}), /Tool not found: z/);
});
