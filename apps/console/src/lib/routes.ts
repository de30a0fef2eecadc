// Routing by the URL fragment (`#/pipelines/default`): the admin service serves one index.html and
// needs no fallback for deep links, and a reload keeps the page.

export const PAGES = ['dashboard', 'models', 'pipelines', 'bots', 'mcp-servers', 'queries', 'dead-letters', 'chat', 'settings', 'users', 'tokens', 'audit', 'knowledge-bases', 'plugins', 'errors', 'sessions', 'skills', 'workspaces', 'live'] as const;
export type PageName = (typeof PAGES)[number];

export interface Route {
  page: PageName;
  /** The resource the page shows, e.g. a pipeline id or a query id. */
  id?: string;
  params: Record<string, string>;
}

function isPage(s: string): s is PageName {
  return PAGES.some((p) => p === s);
}

/** `#/queries/q1?botId=b` → {page: queries, id: q1, params: {botId: b}}; anything unknown → the dashboard. */
export function parseRoute(hash: string): Route {
  const raw = hash.replace(/^#\/?/, '');
  const [pathPart = '', queryPart = ''] = raw.split('?', 2);
  const [first = '', ...rest] = pathPart.split('/').filter(Boolean).map((s) => decodeURIComponent(s));
  const params = Object.fromEntries(new URLSearchParams(queryPart));
  if (!isPage(first)) return { page: 'dashboard', params: {} };
  return { page: first, id: rest.length ? rest.join('/') : undefined, params };
}

export function formatRoute(route: { page: PageName; id?: string; params?: Record<string, string | undefined> }): string {
  let out = `#/${route.page}`;
  if (route.id) out += `/${encodeURIComponent(route.id)}`;
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(route.params ?? {})) if (v) params.set(k, v);
  const qs = params.toString();
  return qs ? `${out}?${qs}` : out;
}
