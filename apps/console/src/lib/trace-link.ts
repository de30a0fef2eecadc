// Trace links: a template such as Jaeger's `http://localhost:16686/trace/{traceId}`. The admin service
// names the deployment's template; a user may override it for their own browser.

export const DEFAULT_TRACE_URL_TEMPLATE = 'http://localhost:16686/trace/{traceId}';
const TRACE_ID = /^[0-9a-f]{32}$/i;

/** The link for a trace, or undefined when the id is no W3C trace id or the template names no `{traceId}`. */
export function traceUrl(template: string, traceId: string | null | undefined): string | undefined {
  if (!traceId || !TRACE_ID.test(traceId) || !template.includes('{traceId}')) return undefined;
  const url = template.replaceAll('{traceId}', traceId.toLowerCase());
  return /^https?:\/\//i.test(url) ? url : undefined;
}
