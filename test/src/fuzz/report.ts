/** What one fuzz category did: how many inputs, how the system answered them, and what broke. */
export interface CategoryReport {
  category: string;
  inputs: number;
  /** HTTP answers 400–499 (the ingress refused the input). */
  status4xx: number;
  /** HTTP answers 200–299 (the ingress took or acknowledged the input). */
  status2xx: number;
  /** Bus payloads a consumer moved to the dead letters, with a reason. */
  deadLettered: number;
  /** Inputs handled without an HTTP answer or a dead letter: consumed bus payloads, accepted configs. */
  handled: number;
  failures: FuzzFailure[];
}

export interface FuzzFailure {
  /** What was wrong, e.g. `500 answer` or `no final callback`. */
  problem: string;
  /** The offending input, cut short for the report. */
  input: string;
}

export function emptyReport(category: string): CategoryReport {
  return { category, inputs: 0, status4xx: 0, status2xx: 0, deadLettered: 0, handled: 0, failures: [] };
}

/** A request that got no answer, with what the client said broke (fetch's own message is only "fetch failed"). */
export function requestFailure(err: unknown): string {
  const cause = err instanceof Error ? err.cause : undefined;
  const detail = cause instanceof Error ? ` (${'code' in cause ? `${String(cause.code)}: ` : ''}${cause.message})` : '';
  return `request failed: ${err instanceof Error ? err.message : String(err)}${detail}`;
}

/** At most this much of an input is kept in a failure (inputs can be megabytes). */
const INPUT_PREVIEW_CHARS = 300;

export function preview(input: unknown): string {
  let text: string;
  if (typeof input === 'string') text = input;
  else if (input instanceof Uint8Array) text = `<${input.byteLength} bytes> ${Buffer.from(input.subarray(0, 200)).toString('utf8')}`;
  else {
    try {
      text = JSON.stringify(input) ?? String(input);
    } catch (err) {
      text = `<unserialisable: ${(err as Error).message}>`;
    }
  }
  return text.length > INPUT_PREVIEW_CHARS ? `${text.slice(0, INPUT_PREVIEW_CHARS)}… (${text.length} chars)` : text;
}

/** The summary table, one row per category and a total row, as Markdown. */
export function formatTable(reports: CategoryReport[]): string {
  const header = ['category', 'inputs', '4xx', '2xx', 'dead-lettered', 'handled', 'failures'];
  const row = (r: CategoryReport) => [r.category, r.inputs, r.status4xx, r.status2xx, r.deadLettered, r.handled, r.failures.length].map(String);
  const total: CategoryReport = reports.reduce(
    (t, r) => ({
      ...t,
      inputs: t.inputs + r.inputs,
      status4xx: t.status4xx + r.status4xx,
      status2xx: t.status2xx + r.status2xx,
      deadLettered: t.deadLettered + r.deadLettered,
      handled: t.handled + r.handled,
      failures: [...t.failures, ...r.failures],
    }),
    emptyReport('total'),
  );
  const rows = [header, ...reports.map(row), row(total)];
  const widths = header.map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |`;
  return [line(header), `|${widths.map((w, i) => (i === 0 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`, ...rows.slice(1).map(line)].join('\n');
}

/** Each failure with its category, grouped by problem so a thousand identical ones read as one line. */
export function formatFailures(reports: CategoryReport[], perProblem = 3): string {
  const out: string[] = [];
  for (const r of reports) {
    const byProblem = new Map<string, FuzzFailure[]>();
    for (const f of r.failures) byProblem.set(f.problem, [...(byProblem.get(f.problem) ?? []), f]);
    for (const [problem, list] of byProblem) {
      out.push(`${r.category}: ${problem} (${list.length}×)`);
      for (const f of list.slice(0, perProblem)) out.push(`    ${f.input}`);
    }
  }
  return out.join('\n');
}

/** Runs `work` over `items` with at most `limit` in flight. */
export async function forEachLimit<T>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      await work(items[i], i);
    }
  });
  await Promise.all(lanes);
}
