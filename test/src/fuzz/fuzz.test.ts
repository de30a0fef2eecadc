import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatDeadLetters, runFuzz } from './suite.js';
import { formatFailures, formatTable } from './report.js';

/**
 * The short form of `npm run fuzz`: a few hundred inputs over every category with a fixed seed, so a
 * failure here repeats with `npm run fuzz -- 400 20261130`.
 */
test('fuzz, short form: no 5xx, no lost or doubled final, every bad bus payload dead-lettered or handled, no crash', async () => {
  const { reports, otherDeadLetters } = await runFuzz({ runs: 400, seed: 20261130 });
  console.log(formatTable(reports));
  if (otherDeadLetters.length > 0) console.log(`dead letters of the system's own messages:\n${formatDeadLetters(otherDeadLetters)}`);
  assert.ok(reports.reduce((n, r) => n + r.inputs, 0) >= 350, 'most inputs were sent');
  const failures = reports.reduce((n, r) => n + r.failures.length, 0);
  assert.equal(failures, 0, formatFailures(reports));
});
