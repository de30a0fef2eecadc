import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ReplyTimeline } from './reply-timeline.js';
import type { StageTiming } from './query-log.js';

function recorder() {
  const steps: [string, StageTiming][] = [];
  let clock = 1_000;
  const timeline = new ReplyTimeline({ timeline: (id, stages) => steps.push(...stages.map((s): [string, StageTiming] => [id, s])) }, () => clock);
  return { steps, timeline, tick: (ms: number) => { clock += ms; } };
}

test('a streamed reply of many chunk sends is one step, from its first send to its last', () => {
  const { steps, timeline, tick } = recorder();
  for (let i = 0; i < 50; i++) {
    timeline.sending('q1', 1);
    tick(10);
    timeline.sent('q1', 1, 'telegram', i === 49);
    tick(5);
  }
  assert.deepEqual(steps, [['q1', { stage: 'deliver telegram', at: 1_000, ms: 50 * 15 - 5 }]]);
});

test('a query\'s later replies get numbered steps; a newer attempt starts the count again, and a superseded attempt\'s send records nothing', () => {
  const { steps, timeline, tick } = recorder();
  const reply = (id: string, attempt: number) => {
    timeline.sending(id, attempt);
    tick(3);
    timeline.sent(id, attempt, 'slack', true);
  };
  reply('q2', 1);
  reply('q2', 1);
  timeline.sending('q2', 2);
  timeline.sent('q2', 1, 'slack', true);
  timeline.sent('q2', 2, 'slack', true);
  assert.deepEqual(steps.map(([, s]) => s.stage), ['deliver slack', 'deliver slack (2)', 'deliver slack']);
});
