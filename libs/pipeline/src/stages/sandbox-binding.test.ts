import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BOX_SESSION_TEMPLATES } from '@conveyor/contracts';
import { testQuery } from '../testing.js';
import { boundSkills, loadPipeline } from '../pipeline.js';
import { buildRunRequest, sandboxWorkspaceId } from './message-processor.js';

test('no sandbox unless the pipeline turns it on; then the binding names the workspace, the network switch and the skills', () => {
  assert.equal(buildRunRequest(testQuery({})).sandbox, undefined);
  const q = testQuery({ config: { ai: { 'local-agent': { 'box-enabled': true } } } });
  q.skills = ['csv-tools'];
  assert.deepEqual(buildRunRequest(q).sandbox, { workspace: 'p1/bot-1/person_s1', network: false, skills: ['csv-tools'] });
  const open = testQuery({ config: { ai: { 'local-agent': { 'box-enabled': 'true', 'box-network': true, 'box-session-id-template': '{global}' } } } });
  assert.deepEqual(buildRunRequest(open).sandbox, { workspace: 'p1/global', network: true, skills: 'all' });
});

test("every scope of LangBot's box-session-id-template, under the pipeline and the chat's storage key", () => {
  const q = testQuery({ group: true, launcherId: 'g9', senderId: 'alice' });
  q.conversationId = 'conv-7';
  const ids = Object.fromEntries(BOX_SESSION_TEMPLATES.map((t) => [t, sandboxWorkspaceId(q, t)]));
  assert.deepEqual(ids, {
    '{global}': 'p1/global',
    '{launcher_type}_{launcher_id}': 'p1/bot-1/group_g9',
    '{launcher_type}_{launcher_id}_{sender_id}': 'p1/bot-1/group_g9_alice',
    '{launcher_type}_{launcher_id}_{conversation_id}': 'p1/bot-1/group_g9_conv-7',
    '{query_id}': `p1/query/${q.queryId}`,
  });
  const web = testQuery({ launcherId: 'g9' });
  web.route = { ...web.route, adapter: 'webchat' };
  assert.equal(sandboxWorkspaceId(web, '{launcher_type}_{launcher_id}'), 'p1/bot-1/webchat:person_g9', 'a web chat session never shares a platform chat\'s workspace');
});

test('a long id keeps its start and a digest of the whole, so two long ids never share a workspace', () => {
  const a = testQuery({ launcherId: 'x'.repeat(900) + 'a' });
  const b = testQuery({ launcherId: 'x'.repeat(900) + 'b' });
  const [ia, ib] = [a, b].map((q) => sandboxWorkspaceId(q, '{launcher_type}_{launcher_id}'));
  assert.ok(ia.length <= 512 && ib.length <= 512);
  assert.notEqual(ia, ib);
});

test("skills bound as LangBot binds them: all unless enable_all_skills is false, then the listed ones", () => {
  assert.equal(boundSkills(undefined), 'all');
  assert.equal(boundSkills({ enable_all_skills: true, skills: ['a'] }), 'all');
  assert.deepEqual(boundSkills({ enable_all_skills: false, skills: ['a', 3, 'b'] }), ['a', 'b']);
  assert.deepEqual(boundSkills({ enable_all_skills: false }), []);
});

test('an unknown box-session-id-template is refused with the key and the choices', () => {
  const loaded = loadPipeline('p', ['MessageProcessor'], { ai: { 'local-agent': { 'box-session-id-template': '{user}' } } });
  assert.equal(loaded.ok, false);
  assert.match(JSON.stringify(!loaded.ok && loaded.issues), /box-session-id-template.*unknown box-session-id-template \\"\{user\}\\"/);
});
