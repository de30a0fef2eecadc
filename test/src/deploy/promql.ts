import { parser } from '@prometheus-io/lezer-promql';

/** What one PromQL expression reads: metric names, the labels it matches on and groups by. */
export interface PromqlReferences {
  /** Every metric a selector names (`name{...}` or `{__name__="name"}`), with the labels its matchers use. */
  selectors: { metric: string; matchedLabels: string[] }[];
  /** Every `by (...)` of an aggregation, with the metrics the aggregated expression reads. */
  groupings: { labels: string[]; metrics: string[] }[];
}

/**
 * Grafana's interval variables stand where PromQL wants a duration; replaced by one so the
 * expression parses. Other variables (`$bot`) are only used inside label matcher strings.
 */
export function withoutGrafanaIntervals(expr: string): string {
  return expr.replace(/\$__(rate_interval|interval|range)\b/g, '5m');
}

/**
 * Reads an expression with Prometheus's own PromQL grammar (the one its web UI uses), so names are
 * told from functions, keywords, label names and strings as Prometheus tells them. Throws on an
 * expression Prometheus would refuse to parse.
 */
export function promqlReferences(expr: string): PromqlReferences {
  const tree = parser.parse(expr);
  const text = (from: number, to: number) => expr.slice(from, to);
  // "…", '…' or `…`; metric and label names need no escapes beyond a quote or a backslash.
  const unquote = (s: string) => s.slice(1, -1).replace(/\\(.)/g, '$1');
  const errors: number[] = [];
  const selectors: PromqlReferences['selectors'] = [];
  const groupings: PromqlReferences['groupings'] = [];

  /** The metric names of the selectors inside [from, to), filled in once the walk has seen them. */
  const pendingGroupings: { labels: string[]; from: number; to: number }[] = [];
  const selectorSpans: { metric: string; from: number }[] = [];

  tree.iterate({
    enter(ref) {
      if (ref.type.isError) errors.push(ref.from);
      const node = ref.node;
      if (ref.name === 'VectorSelector') {
        const ident = node.getChild('Identifier');
        const matchers = node.getChild('LabelMatchers');
        const matchedLabels: string[] = [];
        let metric = ident ? text(ident.from, ident.to) : undefined;
        for (let m = matchers?.firstChild; m; m = m.nextSibling) {
          if (m.name !== 'UnquotedLabelMatcher' && m.name !== 'QuotedLabelMatcher') continue;
          const nameNode = m.getChild('LabelName') ?? m.getChild('QuotedLabelName');
          const value = m.getChild('StringLiteral');
          if (!nameNode) continue;
          const raw = text(nameNode.from, nameNode.to);
          const label = nameNode.name === 'QuotedLabelName' ? unquote(raw) : raw;
          if (label === '__name__' && value) metric = unquote(text(value.from, value.to));
          else matchedLabels.push(label);
        }
        // `{"metric.name"}`: a quoted name alone in the braces is the metric's.
        for (let m = matchers?.firstChild; m && !metric; m = m.nextSibling) {
          if (m.name === 'QuotedLabelName') metric = unquote(text(m.from, m.to));
        }
        if (metric === undefined) throw new Error(`a selector without a metric name in ${expr}`);
        selectors.push({ metric, matchedLabels });
        selectorSpans.push({ metric, from: ref.from });
      }
      if (ref.name === 'AggregateExpr') {
        const modifier = node.getChild('AggregateModifier');
        const by = modifier?.getChild('By') ? modifier.getChild('GroupingLabels') : null;
        if (by) {
          const labels = by.getChildren('LabelName').map((l) => text(l.from, l.to));
          pendingGroupings.push({ labels, from: ref.from, to: ref.to });
        }
      }
    },
  });
  if (errors.length) throw new Error(`not PromQL at ${errors.map((at) => `${at}: …${expr.slice(at, at + 20)}`).join(', ')} in ${expr}`);
  for (const g of pendingGroupings) groupings.push({ labels: g.labels, metrics: selectorSpans.filter((s) => s.from >= g.from && s.from < g.to).map((s) => s.metric) });
  return { selectors, groupings };
}

/** `label_values(metric, label)` or `label_values(label)`: Grafana's variable query, not PromQL. */
export function labelValuesQuery(query: string): { selector: string; label: string } | undefined {
  const m = /^\s*label_values\(\s*(.+?)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$/.exec(query);
  return m ? { selector: m[1]!, label: m[2]! } : undefined;
}

/** Each series of a Prometheus text exposition: its name and label names (comments skipped). */
export function exposedSeries(text: string): Map<string, Set<string>> {
  const series = new Map<string, Set<string>>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s/.exec(line);
    if (!m) continue;
    const labels = series.get(m[1]!) ?? new Set<string>();
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"/g)) labels.add(l[1]!);
    series.set(m[1]!, labels);
  }
  return series;
}
