// Dead letters: messages a consumer gave up on, with the reason; resubmit one to the subject it
// failed on, or discard it.
import { AdminApi } from '@conveyor/contracts';
import { listAll, request } from '../lib/api.js';
import { formatRoute, type Route } from '../lib/routes.js';
import { Busy, DoneNote, ErrorNote, PageHeader, useAction, useLoad } from '../ui.js';
import { useI18n } from '../i18n/react.js';
import { TraceLink, useTraceTemplate } from './queries.js';

/** The payload as text: JSON pretty-printed, anything else as it decodes; undefined if it is no base64. */
function payloadText(base64: string): string | undefined {
  let text: string;
  try {
    text = new TextDecoder().decode(Uint8Array.from(atob(base64), (c) => c.charCodeAt(0)));
  } catch {
    return undefined;
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
  const { t, dateTime } = useI18n();

  const resubmit = (d: AdminApi.DeadLetterEntry) => void action.run(async () => {
    const r = await request('POST', `/dead-letters/${d.seq}/resubmit`, AdminApi.DeadLetterResubmitted);
    list.reload();
    return t('dead.resubmitted', { seq: String(r.seq), subject: r.subject });
  });
  const discard = (d: AdminApi.DeadLetterEntry) => {
    if (!confirm(t('dead.discardConfirm', { seq: String(d.seq) }))) return;
    void action.run(async () => {
      await request('DELETE', `/dead-letters/${d.seq}`, null);
      list.reload();
      return t('dead.discarded', { seq: String(d.seq) });
    });
  };

  return (
    <section>
      <PageHeader title={t('dead.title')}>
        {source ? <a href={formatRoute({ page: 'dead-letters' })}>{t('dead.allSources')}</a> : null}
        <button onClick={list.reload} disabled={list.loading}>{t('common.refresh')}</button>
      </PageHeader>
      <ErrorNote error={list.error ?? action.error} />
      <DoneNote text={action.done} />
      <Busy on={list.loading} />
      {list.data ? (
        <>
          {list.data.more ? <p className="hint">{t('dead.showingOldest', { count: list.data.items.length })}</p> : null}
          <div className="dead-letters">
            {list.data.items.map((d) => (
              <article key={d.seq} className="dead-letter" data-seq={d.seq}>
                <header>
                  <strong>#{d.seq}</strong> <a href={formatRoute({ page: 'dead-letters', params: { source: d.source } })} translate="no">{d.source}</a>
                  <span className="muted"> {t('dead.after', { failedAt: dateTime(d.failedAt), count: d.deliveryCount })}</span>
                </header>
                <p><span className="label">{t('dead.reason')}</span> <span translate="no">{d.reason}{d.error ? `: ${d.error}` : ''}</span></p>
                <p><span className="label">{t('dead.subject')}</span> <span className="mono" translate="no">{d.subject}</span> <span className="label">{t('dead.trace')}</span> <TraceLink template={template} traceId={d.traceId} /></p>
                <details>
                  <summary>{t('dead.payload')}{d.payloadTruncated ? t('dead.truncated') : ''}</summary>
                  {(() => { const text = payloadText(d.payloadBase64); return text === undefined ? <pre>{t('dead.notBase64')}</pre> : <pre translate="no">{text}</pre>; })()}
                </details>
                {canWrite ? (
                  <div className="buttons">
                    <button onClick={() => resubmit(d)} disabled={action.busy || d.payloadTruncated}>{t('dead.resubmit')}</button>
                    <button className="danger" onClick={() => discard(d)} disabled={action.busy}>{t('dead.discard')}</button>
                  </div>
                ) : null}
              </article>
            ))}
            {list.data.items.length === 0 ? <p className="empty">{t('dead.empty')}</p> : null}
          </div>
        </>
      ) : null}
    </section>
  );
}
