// Agent Skills and sandbox workspaces through the admin API: a skill uploaded as a zip (listed, read
// with its SKILL.md and files, announced to the services, replaced, deleted), hostile zips refused
// with nothing stored, a folder the agent wrote in a workspace saved as a skill, the workspaces
// listed and deleted, the viewer role reading only, and every write in the audit log.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AdminApi } from '@conveyor/contracts';
import { closeDatabase, createDatabase, SandboxWorkspaceStore, type Database } from '@conveyor/persistence';
import { packDirectory, SKILL_LIMITS } from '@conveyor/sandbox/skills';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import type { RunningService } from '../harness/services.js';
import { uniqueName } from '../harness/ids.js';
import { ADMIN_PASSWORD, AdminClient, ConfigEvents, startAdmin } from './admin-support.js';
import { skillMd, zipOf } from './skill-zip.js';

describe('admin API: Agent Skills and sandbox workspaces', () => {
  let sys: TestSystem;
  let admin: RunningService;
  let api: AdminClient;
  let viewer: AdminClient;
  let viewerToken: AdminClient;
  let viewerSecret = '';
  let events: ConfigEvents;
  let db: Database;
  let workspaces: SandboxWorkspaceStore;
  const scratch = mkdtempSync(path.join(tmpdir(), 'conveyor-skills-e2e-'));

  /** A zip sent as the body, as the console and scripts send it. */
  const send = async (client: AdminClient | { bearer: string }, zip: Buffer | string, contentType: string = AdminApi.SKILL_UPLOAD_CONTENT_TYPE) => {
    const headers: Record<string, string> = { 'content-type': contentType };
    if (client instanceof AdminClient) headers.cookie = client.sessionCookie() ?? '';
    else headers.authorization = `Bearer ${client.bearer}`;
    const res = await fetch(`${admin.url}/api/v1/skills`, { method: 'POST', body: typeof zip === 'string' ? zip : new Uint8Array(zip), headers });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  const audit = async (resource: string, id: string) =>
    ((await api.call('GET', `/audit?resource=${resource}&resourceId=${encodeURIComponent(id)}`)).body.items as AdminApi.AuditEntry[]);
  const skillCount = () => db.prisma.skill.count();

  before(async () => {
    sys = await startTestSystem({ startServices: false });
    admin = await startAdmin(sys);
    api = new AdminClient(admin.url);
    await api.login();
    const reader = uniqueName('reader');
    assert.equal((await api.call('POST', '/users', { username: reader, password: ADMIN_PASSWORD, role: 'viewer' })).status, 201);
    viewer = new AdminClient(admin.url);
    await viewer.login(reader, ADMIN_PASSWORD);
    const token = await api.call('POST', '/tokens', { name: uniqueName('viewer-token-'), role: 'viewer' });
    assert.equal(token.status, 201);
    viewerSecret = token.body.secret;
    viewerToken = new AdminClient(admin.url, viewerSecret);
    events = await ConfigEvents.open(sys);
    db = createDatabase(sys.db.url, 2);
    workspaces = new SandboxWorkspaceStore(db);
  });

  after(async () => {
    rmSync(scratch, { recursive: true, force: true });
    await events?.close();
    if (db) await closeDatabase(db);
    await sys?.stop();
  });

  test('an uploaded zip is installed, listed, read with its SKILL.md and files, announced, replaced and deleted', async () => {
    const name = uniqueName('csv-tools-');
    const md = skillMd(name, 'Sums the columns of a CSV file.');
    const zip = zipOf([{ name: `${name}/SKILL.md`, data: md }, { name: `${name}/scripts/sum.py`, data: 'import sys\nprint(1)\n' }, { name: `${name}/data/example.csv`, data: 'a,b\n1,2\n' }]);

    const created = await send(api, zip);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const installed = AdminApi.SkillInstalled.parse(created.body);
    assert.deepEqual([installed.outcome, installed.skill.name, installed.skill.files, installed.skill.revision, installed.skill.managedBy], ['created', name, 3, 1, 'console']);
    await events.waitFor('skill', name, 1);

    const listed = AdminApi.Page(AdminApi.Skill).parse((await viewer.call('GET', '/skills')).body).items.find((s) => s.name === name);
    assert.equal(listed?.description, 'Sums the columns of a CSV file.', 'a viewer reads the list');
    const detail = await viewerToken.call('GET', `/skills/${name}`);
    assert.equal(detail.status, 200, 'a viewer token reads a skill');
    const skill = AdminApi.SkillDetail.parse(detail.body);
    assert.equal(skill.skillMd, md);
    assert.equal(skill.instructions, '# Steps\nRun scripts/run.sh.');
    assert.deepEqual(skill.fileList.map((f) => [f.path, f.bytes]), [['SKILL.md', Buffer.byteLength(md)], ['data/example.csv', 8], ['scripts/sum.py', 20]]);

    // The same name again: a new revision, announced, answered 200.
    const again = await send(api, zipOf([{ name: 'SKILL.md', data: skillMd(name, 'Sums CSV columns, faster.') }]));
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.deepEqual([again.body.outcome, again.body.skill.revision, again.body.skill.files], ['replaced', 2, 1]);
    await events.waitFor('skill', name, 2);

    assert.equal((await api.call('DELETE', `/skills/${name}`)).status, 204);
    await events.waitFor('skill', name, 0);
    assert.equal((await api.call('GET', `/skills/${name}`)).status, 404);
    assert.equal((await api.call('DELETE', `/skills/${name}`)).status, 404);
    assert.equal((await api.call('GET', '/skills/Not_A_Skill')).status, 404, 'a name no skill can have');
    assert.deepEqual((await audit('skill', name)).map((e) => [e.action, e.versionBefore, e.versionAfter, e.changes]), [
      ['delete', 2, null, []],
      ['replace', 1, 2, ['source:upload']],
      ['create', null, 1, ['source:upload']],
    ]);
  });

  test('a zip with a path out of the skill, a zip bomb, a link or no SKILL.md is refused with 400 and nothing stored', async () => {
    const before = await skillCount();
    const name = uniqueName('evil-');
    const refused = async (zip: Buffer | string, reason: string, contentType?: string) => {
      const answer = await send(api, zip, contentType);
      assert.equal(answer.status, 400, `${reason}: ${JSON.stringify(answer.body)}`);
      assert.equal(answer.body.code, 'validation_failed');
      assert.equal(answer.body.reason, reason, JSON.stringify(answer.body));
      assert.equal(answer.body.field, 'body');
    };
    await refused(zipOf([{ name: 'SKILL.md', data: skillMd(name, 'Tries to climb out.') }, { name: '../x', data: 'escaped' }]), 'unsafe_path');
    await refused(zipOf([{ name: 'SKILL.md', data: skillMd(name, 'Tries to climb out.') }, { name: 'scripts/../../x.sh', data: 'escaped' }]), 'unsafe_path');
    await refused(zipOf([{ name: 'SKILL.md', data: skillMd(name, 'Absolute.') }, { name: '/etc/cron.d/x', data: 'x' }]), 'unsafe_path');
    const bomb = zipOf([{ name: 'SKILL.md', data: skillMd(name, 'Unpacks too far.') }, { name: 'zeros.bin', data: Buffer.alloc(SKILL_LIMITS.bytes + 1024 * 1024) }]);
    assert.ok(bomb.byteLength < 200_000, `the bomb is small as sent (${bomb.byteLength} bytes)`);
    await refused(bomb, 'too_large');
    await refused(zipOf([{ name: 'SKILL.md', data: skillMd(name, 'Links out.') }, { name: 'passwd', data: '/etc/passwd', mode: 0o120777 }]), 'link');
    await refused(zipOf([{ name: 'README.md', data: 'no skill here' }]), 'no_skill_md');
    await refused(zipOf([{ name: 'SKILL.md', data: '# no front matter' }]), 'bad_front_matter');
    await refused('not a zip at all', 'not_a_zip', 'application/octet-stream');
    // Text Postgres cannot store: refused as the body's, not a server error.
    await refused(zipOf([{ name: 'SKILL.md', data: skillMd(name, 'Holds a NUL.', 'before\0after') }]), 'bad_text');
    assert.equal(await skillCount(), before, 'nothing stored');
    assert.deepEqual(await audit('skill', name), [], 'nothing audited');

    // Not a zip body at all: the content type, and a body past the upload bound (not read: 413).
    const json = await send(api, JSON.stringify({ zip: 'x' }), 'application/json');
    assert.equal(json.status, 400);
    assert.equal(json.body.field, 'header.content-type');
    const empty = await send(api, '', AdminApi.SKILL_UPLOAD_CONTENT_TYPE);
    assert.equal(empty.status, 400);
    const huge = await send(api, Buffer.alloc(SKILL_LIMITS.uploadBytes + 512 * 1024, 1));
    assert.equal(huge.status, 413, JSON.stringify(huge.body));
    assert.equal(huge.body.code, 'validation_failed');
    assert.equal(await skillCount(), before);
  });

  test('a viewer reads skills and workspaces but cannot install, save or delete (403); nothing changes', async () => {
    const name = uniqueName('kept-');
    assert.equal((await send(api, zipOf([{ name: 'SKILL.md', data: skillMd(name, 'Stays.') }]))).status, 201);
    const before = await skillCount();
    const other = zipOf([{ name: 'SKILL.md', data: skillMd(uniqueName('viewer-'), 'Should not land.') }]);
    for (const who of [viewer, { bearer: viewerSecret }]) {
      const answer = await send(who, other);
      assert.equal(answer.status, 403, JSON.stringify(answer.body));
      assert.equal(answer.body.code, 'forbidden');
    }
    for (const client of [viewer, viewerToken]) {
      assert.equal((await client.call('DELETE', `/skills/${name}`)).status, 403);
      assert.equal((await client.call('POST', '/skills/from-workspace', { workspace: 'any', path: 'x' })).status, 403);
      assert.equal((await client.call('DELETE', '/sandbox/workspaces/any')).status, 403);
      assert.equal((await client.call('GET', `/skills/${name}`)).status, 200);
      assert.equal((await client.call('GET', '/sandbox/workspaces')).status, 200);
    }
    assert.equal(await skillCount(), before);
    assert.equal((await api.call('DELETE', `/skills/${name}`)).status, 204);
  });

  test('a folder the agent wrote in a workspace is saved as a skill; the workspace is listed and deleted', async () => {
    // The workspace as the sandbox stores it: the folder, packed by the sandbox's own archive helper.
    const name = uniqueName('report-maker-');
    const root = path.join(scratch, 'workspace');
    mkdirSync(path.join(root, 'skills', name, 'scripts'), { recursive: true });
    mkdirSync(path.join(root, 'notes'), { recursive: true });
    writeFileSync(path.join(root, 'skills', name, 'SKILL.md'), skillMd(name, 'Writes the weekly report.'));
    writeFileSync(path.join(root, 'skills', name, 'scripts', 'run.sh'), '#!/bin/sh\necho report\n');
    writeFileSync(path.join(root, 'notes', 'todo.txt'), 'not a skill');
    const archive = await packDirectory(root);
    const id = `${uniqueName('pipe-')}/bot-1/person_42`;
    assert.equal(await workspaces.save(id, 0, 1, archive, { bytes: 100, files: 3 }), true);

    const saved = await api.call('POST', '/skills/from-workspace', { workspace: id, path: `/workspace/skills/${name}/` });
    assert.equal(saved.status, 201, JSON.stringify(saved.body));
    assert.deepEqual([saved.body.outcome, saved.body.skill.name, saved.body.skill.files], ['created', name, 2]);
    await events.waitFor('skill', name, 1);
    const detail = AdminApi.SkillDetail.parse((await api.call('GET', `/skills/${name}`)).body);
    assert.deepEqual(detail.fileList.map((f) => f.path), ['SKILL.md', 'scripts/run.sh']);
    assert.equal(detail.description, 'Writes the weekly report.');
    const [entry] = await audit('skill', name);
    assert.deepEqual([entry?.action, entry?.changes], ['create', ['source:workspace', `workspace:${id}`, `path:/workspace/skills/${name}`]]);
    // The same folder named relative to the workspace: a new revision.
    const again = await api.call('POST', '/skills/from-workspace', { workspace: id, path: `skills/${name}` });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.skill.revision, 2);

    for (const [body, status, field] of [
      [{ workspace: `${id}-missing`, path: `skills/${name}` }, 404, 'body.workspace'],
      [{ workspace: id, path: 'skills/nothing-here' }, 404, 'body.path'],
      [{ workspace: id, path: 'notes' }, 400, 'body.path'],
      [{ workspace: id, path: '../etc' }, 400, 'body.path'],
      [{ workspace: id, path: '/workspace' }, 400, 'body.path'],
      [{ workspace: id, path: '/etc/passwd' }, 400, 'body.path'],
      [{ workspace: id }, 400, 'body.path'],
      [{ workspace: 'a\u0000b', path: 'x' }, 404, 'body.workspace'],
    ] as const) {
      const answer = await api.call('POST', '/skills/from-workspace', body);
      assert.equal(answer.status, status, `${JSON.stringify(body)}: ${JSON.stringify(answer.body)}`);
      assert.equal(answer.body.field, field, JSON.stringify(answer.body));
    }

    // The workspaces, paged by id.
    const second = `${uniqueName('pipe-')}/global`;
    assert.equal(await workspaces.save(second, 0, 1, await packDirectory(path.join(root, 'notes')), { bytes: 11, files: 1 }), true);
    const all = AdminApi.Page(AdminApi.SandboxWorkspace).parse((await viewer.call('GET', '/sandbox/workspaces')).body).items;
    const listed = all.find((w) => w.id === id);
    assert.deepEqual([listed?.bytes, listed?.files, listed?.revision], [100, 3, 1]);
    assert.ok(all.some((w) => w.id === second));
    const first = AdminApi.Page(AdminApi.SandboxWorkspace).parse((await api.call('GET', '/sandbox/workspaces?limit=1')).body);
    assert.equal(first.items.length, 1);
    assert.ok(first.nextCursor, 'more than one page');
    const next = AdminApi.Page(AdminApi.SandboxWorkspace).parse((await api.call('GET', `/sandbox/workspaces?limit=1&cursor=${encodeURIComponent(first.nextCursor)}`)).body);
    assert.notEqual(next.items[0]?.id, first.items[0]?.id);

    assert.equal((await api.call('DELETE', `/sandbox/workspaces/${encodeURIComponent(id)}`)).status, 204);
    assert.equal(await workspaces.get(id), undefined, 'its files are gone');
    assert.equal((await api.call('DELETE', `/sandbox/workspaces/${encodeURIComponent(id)}`)).status, 404);
    assert.ok(!AdminApi.Page(AdminApi.SandboxWorkspace).parse((await api.call('GET', '/sandbox/workspaces')).body).items.some((w) => w.id === id));
    assert.deepEqual((await audit('sandbox-workspace', id)).map((e) => [e.action, e.versionBefore]), [['delete', 1]]);
    assert.ok((await workspaces.get(second)) !== undefined, 'the other workspace is kept');
    // The skill saved from it stays: it is a copy.
    assert.equal((await api.call('GET', `/skills/${name}`)).status, 200);
    assert.equal((await api.call('DELETE', `/skills/${name}`)).status, 204);
    assert.equal((await api.call('DELETE', `/sandbox/workspaces/${encodeURIComponent(second)}`)).status, 204);
  });

  test('the OpenAPI document has the skill and workspace routes, the upload as a zip body', async () => {
    type Doc = { paths: Record<string, Record<string, { requestBody?: { content?: Record<string, unknown> }; responses?: Record<string, unknown> }>> };
    const doc = (await (await fetch(`${admin.url}/api/docs-json`)).json()) as Doc;
    assert.ok(doc.paths['/api/v1/skills']?.post?.requestBody?.content?.[AdminApi.SKILL_UPLOAD_CONTENT_TYPE], 'the upload is a zip body');
    assert.ok(doc.paths['/api/v1/skills']?.post?.responses?.['201'] && doc.paths['/api/v1/skills']?.post?.responses?.['200'], 'created and replaced');
    assert.ok(doc.paths['/api/v1/skills/from-workspace']?.post?.requestBody?.content?.['application/json']);
    for (const [p, method] of [['/api/v1/skills', 'get'], ['/api/v1/skills/{name}', 'get'], ['/api/v1/skills/{name}', 'delete'], ['/api/v1/sandbox/workspaces', 'get'], ['/api/v1/sandbox/workspaces/{id}', 'delete']] as const) {
      assert.ok(doc.paths[p]?.[method], `${method} ${p}`);
    }
  });
});
