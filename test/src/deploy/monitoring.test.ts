import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { connect } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { parse } from 'yaml';
import { sign } from '@conveyor/http-bot';
import { addBot, addOneBotBot, NATS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { repoRoot } from '../harness/services.js';
import { waitUntil } from '../harness/wait.js';
import { sample } from '../harness/metrics.js';
import { startCallbackReceiver, startFakeOneBot, type CallbackReceiver, type FakeOneBot } from '../fakes/index.js';
import { startAdmin } from '../admin/admin-support.js';
import { renderOverlay } from './artifacts.js';
import { exposedSeries, labelValuesQuery, promqlReferences, withoutGrafanaIntervals, type PromqlReferences } from './promql.js';

const DASHBOARDS_DIR = path.join(repoRoot, 'k8s/components/monitoring/dashboards');
const RULES_FILE = path.join(repoRoot, 'deploy/prometheus/rules.yml');
const PROMETHEUS_RULE = path.join(repoRoot, 'k8s/components/monitoring/prometheusrule.yaml');
const DATASOURCES = path.join(repoRoot, 'deploy/grafana/provisioning/datasources/prometheus.yaml');
/** Series Prometheus makes itself for every target, not any service's. */
const PROMETHEUS_SERIES = new Set(['up']);
/** Labels the scrape adds (the PodMonitor's, and compose's scrape config sets the same). */
const TARGET_LABELS = new Set(['container', 'pod', 'namespace', 'job', 'instance', 'endpoint', 'service']);

interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  gridPos: { h: number; w: number; x: number; y: number };
  targets?: { refId: string; expr: string; datasource?: { type: string; uid: string } }[];
}
interface Dashboard {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: { name: string; type: string; query: string | { query: string }; current?: { value: string } }[] };
}
interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

const dashboardFiles = readdirSync(DASHBOARDS_DIR).filter((f) => f.endsWith('.json')).sort();
const dashboards = dashboardFiles.map((f) => ({ file: f, json: JSON.parse(readFileSync(path.join(DASHBOARDS_DIR, f), 'utf8')) as Dashboard }));
const rulesFile = parse(readFileSync(RULES_FILE, 'utf8')) as { groups: { name: string; rules: Rule[] }[] };
const rules = rulesFile.groups.flatMap((g) => g.rules);
const provisionedUid = (parse(readFileSync(DATASOURCES, 'utf8')) as { datasources: { uid: string; type: string }[] }).datasources.find((d) => d.type === 'prometheus')!.uid;

/** Every PromQL expression the dashboards and the alerts evaluate, named by where it is. */
function expressions(): { where: string; expr: string }[] {
  const out: { where: string; expr: string }[] = [];
  for (const { file, json } of dashboards) {
    for (const p of json.panels) for (const t of p.targets ?? []) out.push({ where: `${file} "${p.title}" ${t.refId}`, expr: withoutGrafanaIntervals(t.expr) });
    for (const v of json.templating.list) {
      if (v.type !== 'query') continue;
      const lv = labelValuesQuery(typeof v.query === 'string' ? v.query : v.query.query);
      assert.ok(lv, `${file} variable ${v.name}: label_values(metric, label) expected`);
      // As a selector that reads the label, so the label's existence is checked like a matcher's.
      out.push({ where: `${file} variable ${v.name}`, expr: `count by (${lv.label}) (${lv.selector})` });
    }
  }
  for (const r of rules) out.push({ where: `alert ${r.alert}`, expr: r.expr });
  return out;
}

/** What the expressions read that the scraped services do not export: metric names, then labels. */
function unexported(refs: { where: string; refs: PromqlReferences }[], exported: Map<string, Set<string>>): string[] {
  const problems: string[] = [];
  const labelsOf = (metric: string) => exported.get(metric) ?? new Set<string>();
  for (const { where, refs: r } of refs) {
    for (const s of r.selectors) {
      if (PROMETHEUS_SERIES.has(s.metric)) continue;
      if (!exported.has(s.metric)) {
        problems.push(`${where}: ${s.metric} is exported by no service`);
        continue;
      }
      for (const l of s.matchedLabels) if (!TARGET_LABELS.has(l) && !labelsOf(s.metric).has(l)) problems.push(`${where}: ${s.metric} has no label ${l}`);
    }
    for (const g of r.groupings) {
      const known = new Set(g.metrics.flatMap((m) => [...labelsOf(m)]));
      for (const l of g.labels) if (!TARGET_LABELS.has(l) && !known.has(l) && !g.metrics.every((m) => PROMETHEUS_SERIES.has(m))) problems.push(`${where}: by (${l}) but ${g.metrics.join(', ')} has no label ${l}`);
    }
  }
  return problems;
}

describe('monitoring: dashboards and alerts', () => {
  test('the PromQL reader: names, not functions, keywords, labels or strings; bad PromQL refused', () => {
    const r = promqlReferences(withoutGrafanaIntervals('histogram_quantile(0.95, sum by (le, stage) (rate(a_bucket{x=~"$bot", y!="rate(b)"}[$__rate_interval]))) > on() group_left sum without (z) (c offset 5m) unless {__name__="d"}'));
    assert.deepEqual(r.selectors.map((s) => s.metric), ['a_bucket', 'c', 'd']);
    assert.deepEqual(r.selectors[0]!.matchedLabels, ['x', 'y']);
    assert.deepEqual(r.groupings, [{ labels: ['le', 'stage'], metrics: ['a_bucket'] }], '`without` groups by nothing named');
    assert.throws(() => promqlReferences('sum(rate(a[5m])'), /not PromQL/);
    assert.throws(() => promqlReferences('rate(a[$__rate_interval])'), /not PromQL/);
    const exported = new Map([['a_bucket', new Set(['x', 'le'])]]);
    assert.deepEqual(unexported([{ where: 'w', refs: r }], exported), ['w: a_bucket has no label y', 'w: c is exported by no service', 'w: d is exported by no service', 'w: by (stage) but a_bucket has no label stage']);
  });

  test('the compose rules file and the PrometheusRule hold the same alerts, each complete and documented', () => {
    const prometheusRule = parse(readFileSync(PROMETHEUS_RULE, 'utf8')) as { kind: string; spec: unknown };
    assert.equal(prometheusRule.kind, 'PrometheusRule');
    assert.deepEqual(prometheusRule.spec, rulesFile, 'deploy/prometheus/rules.yml and the PrometheusRule\'s spec differ');
    const operations = readFileSync(path.join(repoRoot, 'docs/OBSERVABILITY.md'), 'utf8');
    assert.equal(new Set(rules.map((r) => r.alert)).size, rules.length, 'alert names are unique');
    for (const r of rules) {
      assert.match(r.alert, /^Conveyor[A-Z]\w+$/);
      assert.ok(['critical', 'warning'].includes(r.labels.severity!), `${r.alert}: severity`);
      assert.ok(r.annotations.summary, `${r.alert}: summary`);
      if (r.for !== undefined) assert.match(r.for, /^\d+[smh]$/);
      promqlReferences(r.expr);
      assert.ok(operations.includes(`\`${r.alert}\``), `${r.alert} is in docs/OBSERVABILITY.md`);
    }
  });

  test('the dashboards: unique uids, every panel a query of the provisioned Prometheus, laid out on the grid', () => {
    assert.ok(dashboards.length >= 4, dashboardFiles.join(', '));
    const operations = readFileSync(path.join(repoRoot, 'docs/OBSERVABILITY.md'), 'utf8');
    for (const { json } of dashboards) assert.ok(operations.includes(`(\`${json.uid}\`)`), `${json.uid} is described in docs/OBSERVABILITY.md`);
    assert.equal(new Set(dashboards.map((d) => d.json.uid)).size, dashboards.length, 'uids are unique');
    for (const { file, json } of dashboards) {
      assert.equal(`${json.uid}.json`, file, 'the file is named by its uid');
      assert.ok(json.title.startsWith('Conveyor / '), `${file}: title`);
      const variable = json.templating.list.find((v) => v.name === 'datasource');
      assert.ok(variable, `${file}: a datasource variable (another Grafana's Prometheus has another uid)`);
      assert.equal(variable.type, 'datasource');
      assert.equal(variable.query, 'prometheus');
      assert.equal(variable.current?.value, provisionedUid, `${file}: defaults to the provisioned datasource`);
      const isOurs = (ds: { type: string; uid: string } | undefined) => ds?.type === 'prometheus' && (ds.uid === '${datasource}' || ds.uid === provisionedUid);
      assert.equal(new Set(json.panels.map((p) => p.id)).size, json.panels.length, `${file}: panel ids are unique`);
      const queries = json.panels.filter((p) => p.type !== 'row');
      assert.ok(queries.length > 0);
      for (const p of queries) {
        const where = `${file} "${p.title}"`;
        assert.ok(p.title, `${file} panel ${p.id}: a title`);
        assert.ok(isOurs(p.datasource), `${where}: datasource ${JSON.stringify(p.datasource)}`);
        assert.ok(p.targets && p.targets.length > 0, `${where}: targets`);
        assert.equal(new Set(p.targets.map((t) => t.refId)).size, p.targets.length, `${where}: refIds are unique`);
        for (const t of p.targets) {
          assert.ok(typeof t.expr === 'string' && t.expr.trim(), `${where} ${t.refId}: expr`);
          assert.ok(t.datasource === undefined || isOurs(t.datasource), `${where} ${t.refId}: datasource`);
        }
        const g = p.gridPos;
        assert.ok(g.w > 0 && g.h > 0 && g.x >= 0 && g.x + g.w <= 24, `${where}: gridPos ${JSON.stringify(g)}`);
      }
    }
  });

  test('Kubernetes ships the same dashboard files as a ConfigMap for Grafana\'s sidecar', () => {
    const objects = renderOverlay(path.join(repoRoot, 'k8s/overlays/prod'));
    const cm = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'conveyor-grafana-dashboards');
    assert.ok(cm, 'the dashboards ConfigMap');
    assert.equal(cm.metadata.labels?.grafana_dashboard, '1');
    const data = cm.data as Record<string, string>;
    assert.deepEqual(Object.keys(data).sort(), dashboardFiles);
    for (const f of dashboardFiles) assert.equal(data[f], readFileSync(path.join(DASHBOARDS_DIR, f), 'utf8'), `${f} as in the repository`);
  });

  describe('against a running system', () => {
    let sys: TestSystem;
    let onebot: FakeOneBot;
    let refusingIntegrator: CallbackReceiver;
    let refusedBotId: string;
    const ONEBOT_TOKEN = 'monitoring-onebot-token';

    before(async () => {
      // A priced model, so the calls' cost is counted.
      sys = await startTestSystem({ startServices: false, modelPrices: { inputPricePerMTok: 0.5, outputPricePerMTok: 1.5 } });
      [onebot, refusingIntegrator] = await Promise.all([
        startFakeOneBot({ accessToken: ONEBOT_TOKEN }),
        // An integrator that refuses every callback: the dispatcher's sends to it fail.
        startCallbackReceiver({ secret: sys.inboundSecret, respond: () => 500 }),
      ]);
      await addOneBotBot(sys, 'QQ bot', { host: onebot.host, port: onebot.port, 'access-token': ONEBOT_TOKEN });
      refusedBotId = await addBot(sys, 'refused bot', 'http-bot', { inbound_secret: sys.inboundSecret, callback_url: `${refusingIntegrator.url}/callback`, callback_max_retries: '0' });
      await sys.services.startAll();
      await Promise.all([startAdmin(sys), sys.services.start('gateway', { GATEWAY_LEASE_TTL_MS: '3000' })]);
      await onebot.waitForConnections((c) => c.open === 1, 60_000);
    });

    after(async () => {
      await sys?.stop();
      await Promise.all([onebot?.close(), refusingIntegrator?.close()]);
    });

    async function answered(sessionId: string, text: string): Promise<void> {
      const res = await sys.post({ session_id: sessionId, message: [{ type: 'Plain', text }] });
      assert.equal(res.status, 202, await res.clone().text());
      const { data } = (await res.json()) as { data: { accepted_message_id: string } };
      await sys.callbacks.waitFor((r) => r.some((c) => c.json?.reply_to === data.accepted_message_id), 90_000);
    }

    test('every metric and label a dashboard panel, variable or alert reads is exported by a service', async () => {
      // A streamed model call (latency, first chunk, tokens), then one the model fails (error_type).
      sys.llm.setDefault({ text: 'Monitored answer' });
      await answered('monitoring-ok', 'hello');
      sys.llm.setDefault({ error: { status: 503, message: 'overloaded' } });
      await answered('monitoring-model-down', 'hello again');
      // The failure's notice to an integrator that refuses every callback: a send failure.
      const raw = Buffer.from(JSON.stringify({ session_id: 'monitoring-refused', message: [{ type: 'Plain', text: 'no one listens' }] }));
      const ts = String(Math.floor(Date.now() / 1000));
      const refused = await fetch(`${sys.services.get('ingress').url}/bots/${refusedBotId}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-lb-timestamp': ts, 'x-lb-signature': sign(sys.inboundSecret, ts, raw) },
        body: raw,
      });
      assert.equal(refused.status, 202, await refused.clone().text());
      await refusingIntegrator.waitFor((r) => r.length >= 1, 90_000);
      sys.llm.setDefault({ text: 'Monitored answer' });

      // Through the gateway's held connection and back.
      onebot.emitMessage({ messageType: 'private', userId: 4242, message: [{ type: 'text', data: { text: 'hello over qq' } }] });
      await onebot.waitFor((a) => a.some((x) => x.action === 'send_msg' && x.params.user_id === 4242), 90_000);

      // A query no orchestrator can read: a dead letter.
      const nc = await connect({ servers: NATS_URL });
      try {
        await jetstream(nc).publish(sys.topology.subjects.query(sys.botId), 'not a query', { msgID: `monitoring-garbage-${sys.prefix}` });
      } finally {
        await nc.close();
      }

      const checked = expressions().map(({ where, expr }) => ({ where, refs: promqlReferences(expr) }));
      const scrapeAll = async () => {
        const exported = new Map<string, Set<string>>();
        for (const svc of sys.services.services) {
          const text = await (await fetch(`${svc.healthUrl}/metrics`)).text();
          for (const [name, labels] of exposedSeries(text)) exported.set(name, new Set([...(exported.get(name) ?? []), ...labels]));
        }
        return exported;
      };
      assert.deepEqual(sys.services.services.map((s) => s.name).sort(), ['admin', 'dispatcher', 'gateway', 'ingress', 'orchestrator', 'runner']);
      // Counters appear with their first sample: wait for the refused send and the dead letter to be counted.
      await waitUntil('every metric the dashboards and alerts read is exported', async () => {
        const problems = unexported(checked, await scrapeAll());
        if (problems.length) throw new Error(`\n  ${problems.join('\n  ')}`);
        return true;
      }, 120_000, 1_000);
      // The series the send-failure alert watches counts the refused reply (a zero would watch nothing).
      const dispatcher = await (await fetch(`${sys.services.get('dispatcher').healthUrl}/metrics`)).text();
      await waitUntil('the refused reply counted as a failed part', async () => (sample(await (await fetch(`${sys.services.get('dispatcher').healthUrl}/metrics`)).text(), 'conveyor_dispatch_parts_failed_total') ?? 0) > 0, 60_000, 500)
        .catch((err: Error) => assert.fail(`${err.message}\n${dispatcher.split('\n').filter((l) => l.startsWith('conveyor_dispatch')).join('\n')}`));
    });
  });
});
