// Dead letters: messages a consumer gave up on, with the reason; resubmit one to the subject it
// failed on, or discard it.
import { AdminApi } from '@conveyor/contracts';
import { listAll, request } from '../lib/api.js';
import { formatRoute, type Route } from '../lib/routes.js';
import { Busy, DoneNote, ErrorNote, PageHeader, fmtTime, useAction, useLoad } from '../ui.js';
import { TraceLink, useTraceTemplate } from './queries.js';

/** The payload as text: JSON pretty-printed, anything else as it decodes. */
function payloadText(base64: string): string {
  let text: string;
  try {
    text = new TextDecoder().decode(Uint8Array.from(atob(base64), (c) => c.charCodeAt(0)));
  } catch {
    return '(not base64)';
  }
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

export function DeadLetters({ route, canWrite, traceUrlTemplate }: { route: Route; canWrite: boolean; traceUrlTemplate: string }) {
  const [template] = useTraceTemplate(traceUrlTemplate);
  const source = route.params.source || undefined;
  const list = useLoad((signal) => listAll('/dead-letters', AdminApi.DeadLetterEntry, { query: { source }, maxItems: 500, signal }), [source]);
  const action = useAction();

  const resubmit = (d: AdminApi.DeadLetterEntry) => void action.run(async () => {
    const r = await request('POST', `/dead-letters/${d.seq}/resubmit`, AdminApi.DeadLetterResubmitted);
    list.reload();
    return `Dead letter ${r.seq} resubmitted to ${r.subject}.`;
  });
  const discard = (d: AdminApi.DeadLetterEntry) => {
    if (!confirm(`Discard dead letter ${d.seq}? Its message is lost.`)) return;
    void action.run(async () => {
      await request('DELETE', `/dead-letters/${d.seq}`, null);
      list.reload();
      return `Dead letter ${d.seq} discarded.`;
    });
  };

  return (
    <section>
      <PageHeader title="Dead letters">
        {source ? <a href={formatRoute({ page: 'dead-letters' })}>All sources</a> : null}
        <button onClick={list.reload} disabled={list.loading}>Refresh</button>
      </PageHeader>
      <ErrorNote error={list.error ?? action.error} />
      <DoneNote text={action.done} />
      <Busy on={list.loading} />
      {list.data ? (
        <>
          {list.data.more ? <p className="hint">Showing the oldest {list.data.items.length}.</p> : null}
          <div className="dead-letters">
            {list.data.items.map((d) => (
              <article key={d.seq} className="dead-letter" data-seq={d.seq}>
                <header>
                  <strong>#{d.seq}</strong> <a href={formatRoute({ page: 'dead-letters', params: { source: d.source } })}>{d.source}</a>
                  <span className="muted"> {fmtTime(d.failedAt)}, after {d.deliveryCount} deliveries</span>
                </header>
                <p><span className="label">Reason</span> {d.reason}{d.error ? `: ${d.error}` : ''}</p>
                <p><span className="label">Subject</span> <span className="mono">{d.subject}</span> <span className="label">Trace</span> <TraceLink template={template} traceId={d.traceId} /></p>
                <details>
                  <summary>Payload{d.payloadTruncated ? ' (truncated: cannot be resubmitted)' : ''}</summary>
                  <pre>{payloadText(d.payloadBase64)}</pre>
                </details>
                {canWrite ? (
                  <div className="buttons">
                    <button onClick={() => resubmit(d)} disabled={action.busy || d.payloadTruncated}>Resubmit</button>
                    <button className="danger" onClick={() => discard(d)} disabled={action.busy}>Discard</button>
                  </div>
                ) : null}
              </article>
            ))}
            {list.data.items.length === 0 ? <p className="empty">No dead letters.</p> : null}
          </div>
        </>
      ) : null}
    </section>
  );
}
