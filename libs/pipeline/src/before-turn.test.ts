import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_PIPELINE_STAGES } from './defaults.js';
import { runBeforeTurn, stagesBeforeTurn, STAGES_BEFORE_TURN } from './before-turn.js';
import { loadPipeline, type PipelineDefinition } from './pipeline.js';
import { recordingDeps, testQuery } from './testing.js';
import type { Stage } from './engine/stage.js';
import { interrupt } from './engine/result.js';
import type { StageTime } from './engine/timed-stages.js';
import { timedStages } from './engine/timed-stages.js';

function pipeline(stages: readonly string[], config: Record<string, unknown> = {}): PipelineDefinition {
  const loaded = loadPipeline('p1', stages, config);
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.issues));
  return loaded.pipeline;
}

const DEFAULT = pipeline(DEFAULT_PIPELINE_STAGES);
const { deps } = recordingDeps();

test('the stages before the turn are the leading respond-rule and access-control stages, never past MessageProcessor', () => {
  assert.deepEqual([...STAGES_BEFORE_TURN].sort(), ['BanSessionCheckStage', 'GroupRespondRuleCheckStage']);
  assert.equal(stagesBeforeTurn(DEFAULT), 2);
  // A stage that needs the turn first (the content filter may notify the user) ends the early ones.
  assert.equal(stagesBeforeTurn(pipeline(['PreContentFilterStage', 'GroupRespondRuleCheckStage', 'MessageProcessor'])), 0);
  assert.equal(stagesBeforeTurn(pipeline(['BanSessionCheckStage', 'PreProcessor', 'GroupRespondRuleCheckStage', 'MessageProcessor'])), 1);
  assert.equal(stagesBeforeTurn(pipeline(['MessageProcessor', 'GroupRespondRuleCheckStage'])), 0);
});

test('a group message no rule matches is dropped before the turn, silently', async () => {
  const q = testQuery({ group: true, chain: [{ type: 'Plain', text: 'just chatting' }] });
  const { deps: recording, rec } = recordingDeps();
  assert.deepEqual(await runBeforeTurn(DEFAULT, q, recording), { kind: 'dropped' });
  assert.deepEqual(rec.notices, []);
});

test('a group message that mentions the bot goes on from the first stage after them, its mention removed', async () => {
  const q = testQuery({ group: true, chain: [{ type: 'At', target: 'http_bot', display: '' }, { type: 'Plain', text: ' ping' }] });
  assert.deepEqual(await runBeforeTurn(DEFAULT, q, deps), { kind: 'go-on', from: 2 });
  assert.deepEqual(q.messageChain, [{ type: 'Plain', text: ' ping' }]);
  assert.equal(q.currentStage, 'BanSessionCheckStage');
});

test('access control drops a blacklisted sender before the turn; a person message otherwise goes on', async () => {
  const def = pipeline(DEFAULT_PIPELINE_STAGES, { trigger: { 'access-control': { mode: 'blacklist', blacklist: ['person_blocked'] } } });
  const blocked = testQuery({ launcherId: 'blocked', config: def.config });
  const { deps: recording, rec } = recordingDeps();
  assert.deepEqual(await runBeforeTurn(def, blocked, recording), { kind: 'dropped' });
  assert.match(JSON.stringify(rec.logs), /Ignore message according to access control: person_blocked/);
  assert.deepEqual(await runBeforeTurn(def, testQuery({ launcherId: 'welcome', config: def.config }), deps), { kind: 'go-on', from: 2 });
});

test('the random respond rule is drawn once, before the turn: what it decided is what the turn goes on with', async () => {
  const def = pipeline(DEFAULT_PIPELINE_STAGES, { trigger: { 'group-respond-rules': { random: 0.5 } } });
  const draws: number[] = [];
  const drawing = (value: number) => ({ ...deps, random: () => (draws.push(value), value) });
  assert.deepEqual(await runBeforeTurn(def, testQuery({ group: true, config: def.config }), drawing(0.9)), { kind: 'dropped' });
  assert.deepEqual(await runBeforeTurn(def, testQuery({ group: true, config: def.config }), drawing(0.1)), { kind: 'go-on', from: 2 });
  assert.deepEqual(draws, [0.9, 0.1]);
});

test('a pipeline with no such leading stage goes on from its first stage, running nothing', async () => {
  const q = testQuery({ group: true });
  assert.deepEqual(await runBeforeTurn(pipeline(['PreProcessor', 'MessageProcessor']), q, deps), { kind: 'go-on', from: 0 });
  assert.equal(q.currentStage, undefined);
});

test('what the early run does not expect (a stage that fails) leaves the whole query to its turn', async () => {
  const q = testQuery({ group: true, chain: [{ type: 'At', target: 'http_bot', display: '' }, { type: 'Plain', text: 'hi' }] });
  const failing = (stages: Stage[]): Stage[] => stages.map((s) => (s.name === 'BanSessionCheckStage' ? { name: s.name, process: () => { throw new Error('boom'); } } : s));
  assert.deepEqual(await runBeforeTurn(DEFAULT, q, deps, failing), { kind: 'in-turn', reason: 'boom' });
  // A notice must go out in the session's order, which only the turn keeps.
  const notifying = (stages: Stage[]): Stage[] => stages.map((s) => (s.name === 'BanSessionCheckStage' ? { name: s.name, process: () => interrupt({ userNotice: 'go away' }) } : s));
  const { deps: recording, rec } = recordingDeps();
  assert.deepEqual(await runBeforeTurn(DEFAULT, testQuery(), recording, notifying), { kind: 'in-turn', reason: 'a stage before the turn asked to notify the user' });
  assert.deepEqual(rec.notices, []);
});

test('the stages before the turn are timed like the turn\'s, through the wrapper given', async () => {
  const times: StageTime[] = [];
  await runBeforeTurn(DEFAULT, testQuery(), deps, (stages) => timedStages(stages, (t) => times.push(t)));
  assert.deepEqual(times.map((t) => t.stage), ['GroupRespondRuleCheckStage', 'BanSessionCheckStage']);
});
