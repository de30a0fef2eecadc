import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ChaosRig, faultViolations, SANDBOX_RIG_COMMAND, type TrialOptions } from '../chaos/rig.js';

/** A message's text, whether its content is a string or a list of text parts. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p: { text?: unknown }) => (typeof p?.text === 'string' ? p.text : '')).join('');
  return JSON.stringify(content);
}

/**
 * The chaos suite's sandbox trial in short form (`npm run chaos -- N sandbox` runs many): the agent
 * runs a command in the sandbox before every answer, and one of two sandbox replicas is SIGKILLed
 * while commands run. The run whose command died gets a tool error (a command is not run twice) and
 * answers anyway: every accepted message still ends with exactly one final callback, in order.
 */
describe('chaos: a sandbox replica killed while the agent\'s commands run', () => {
  let rig: ChaosRig;
  const trial: TrialOptions = { sessions: 4, messagesPerSession: 3, outageMs: 0, deadlineMs: 150_000 };

  before(async () => {
    // A call whose replica died is given up after its command's time limit plus this (production: 30 s).
    rig = await ChaosRig.start({ SANDBOX_CALL_OVERHEAD_MS: '8000' }, { sandbox: true });
  });

  after(async () => {
    await rig?.stop();
  });

  test('sandbox: nothing accepted is lost, duplicated or reordered, and every run ran its command or was told it failed', async () => {
    const r = await rig.trial('sandbox', trial);
    assert.ok(r.accepted >= trial.sessions, `messages were accepted (${r.accepted})`);
    assert.deepEqual(faultViolations('sandbox', r), [], `sandbox trial: ${JSON.stringify({ ...r, logs: undefined })}\n${rig.sys.services.allLogs().split('\n').filter((l) => /"level":(40|50|60)/.test(l)).slice(-30).join('\n')}`);
    // What the model was given back for each command: the command's output, or an error saying why not.
    const toolResults = rig.sys.llm.requests.flatMap((q) => (q.body.messages ?? []).filter((m) => m.role === 'tool').map((m) => textOf(m.content)));
    assert.ok(toolResults.length >= r.accepted, `a tool result for every run (${toolResults.length} for ${r.accepted})`);
    const ran = toolResults.filter((t) => /exit code: 0/.test(t) || /stdout:\n\d+/.test(t));
    assert.ok(ran.length > 0, `commands ran (${SANDBOX_RIG_COMMAND}): ${toolResults.slice(0, 3).join(' | ')}`);
    for (const t of toolResults.filter((x) => !ran.includes(x))) assert.match(t, /sandbox|replica|stopped|timed out|no longer/i, `a failed command is reported as the sandbox's failure: ${t}`);
  });
});
