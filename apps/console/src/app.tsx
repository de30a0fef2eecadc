// The console's shell: who is signed in, the navigation, and the page the URL fragment names.
import { useEffect, useState } from 'react';
import { z } from 'zod';
import { AdminApi } from '@conveyor/contracts';
import { ApiError, onUnauthenticated, request } from './lib/api.js';
import { formatRoute, parseRoute, type PageName, type Route } from './lib/routes.js';
import { DEFAULT_TRACE_URL_TEMPLATE } from './lib/trace-link.js';
import { SignIn } from './auth.js';
import { Busy, ErrorNote } from './ui.js';
import { LanguageSwitch, useI18n } from './i18n/react.js';
import { Dashboard } from './pages/dashboard.js';
import { Models } from './pages/models.js';
import { Pipelines } from './pages/pipelines.js';
import { Bots } from './pages/bots.js';
import { McpServers } from './pages/mcp-servers.js';
import { Queries } from './pages/queries.js';
import { Errors } from './pages/errors.js';
import { Sessions } from './pages/sessions.js';
import { DeadLetters } from './pages/dead-letters.js';
import { DebugChat } from './pages/chat.js';
import { Settings } from './pages/settings.js';
import { Users } from './pages/users.js';
import { Tokens } from './pages/tokens.js';
import { Audit } from './pages/audit.js';
import { KnowledgeBases } from './pages/knowledge-bases.js';
import { Plugins } from './pages/plugins.js';
import { Live, WaitingBadge } from './pages/live.js';
import { Skills } from './pages/skills.js';
import { Workspaces } from './pages/workspaces.js';

const NAV: PageName[] = ['dashboard', 'models', 'pipelines', 'bots', 'knowledge-bases', 'plugins', 'mcp-servers', 'skills', 'workspaces', 'live', 'queries', 'errors', 'sessions', 'dead-letters', 'chat', 'settings'];
/** Pages only an admin can read (the API answers 403 to a viewer). */
const ADMIN_NAV: PageName[] = ['users', 'tokens', 'audit'];

/** What the admin service tells the console about its deployment (`console-config.json` beside index.html). */
const ConsoleConfig = z.object({ traceUrlTemplate: z.string().default(DEFAULT_TRACE_URL_TEMPLATE) });
export type ConsoleConfig = z.infer<typeof ConsoleConfig>;

async function loadConsoleConfig(): Promise<ConsoleConfig> {
  try {
    const res = await fetch('./console-config.json', { credentials: 'same-origin' });
    if (res.ok) return ConsoleConfig.parse(await res.json());
  } catch {
    // No deployment settings: the defaults serve.
  }
  return ConsoleConfig.parse({});
}

type Auth = { state: 'loading' } | { state: 'error'; error: unknown } | { state: 'signed-out'; setupRequired: boolean } | { state: 'signed-in'; me: AdminApi.Me };

function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(location.hash));
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}

export function App() {
  const [auth, setAuth] = useState<Auth>({ state: 'loading' });
  const [config, setConfig] = useState<ConsoleConfig>(() => ConsoleConfig.parse({}));
  const route = useRoute();
  const { t } = useI18n();

  const checkSession = async () => {
    try {
      const me = await request('GET', '/auth/me', AdminApi.Me);
      setAuth({ state: 'signed-in', me });
    } catch (err) {
      if (!(err instanceof ApiError) || err.code !== 'unauthenticated') return setAuth({ state: 'error', error: err });
      try {
        const status = await request('GET', '/auth/status', AdminApi.AuthStatus);
        setAuth({ state: 'signed-out', setupRequired: status.setupRequired });
      } catch (e) {
        setAuth({ state: 'error', error: e });
      }
    }
  };

  useEffect(() => {
    void checkSession();
    void loadConsoleConfig().then(setConfig);
    return onUnauthenticated(() => setAuth((a) => (a.state === 'signed-in' ? { state: 'signed-out', setupRequired: false } : a)));
  }, []);

  if (auth.state === 'loading') return <Busy on label={t('app.connecting')} />;
  if (auth.state === 'error') {
    return (
      <main className="signin">
        <LanguageSwitch />
        <ErrorNote error={auth.error} />
        <button onClick={() => { setAuth({ state: 'loading' }); void checkSession(); }}>{t('app.tryAgain')}</button>
      </main>
    );
  }
  if (auth.state === 'signed-out') return <SignIn setupRequired={auth.setupRequired} onSignedIn={(me) => setAuth({ state: 'signed-in', me })} />;

  const signOut = async () => {
    await request('POST', '/auth/logout', null).catch(() => undefined);
    setAuth({ state: 'signed-out', setupRequired: false });
  };
  const canWrite = auth.me.role === 'admin';

  return (
    <div className="shell">
      <nav className="sidebar" aria-label={t('app.navLabel')}>
        <div className="brand" translate="no">Conveyor</div>
        {[...NAV, ...(canWrite ? ADMIN_NAV : [])].map((page) => (
          <a key={page} href={formatRoute({ page })} className={route.page === page ? 'active' : undefined} aria-current={route.page === page ? 'page' : undefined}>{t(`nav.${page}`)}{page === 'live' ? <WaitingBadge /> : null}</a>
        ))}
        <div className="who">
          <span title={t('app.signedInBy', { via: t(`via.${auth.me.via}`) })}>{t('app.who', { username: auth.me.username, role: t(`role.${auth.me.role}`) })}</span>
          <button className="link" onClick={() => void signOut()}>{t('app.signOut')}</button>
          <LanguageSwitch />
        </div>
      </nav>
      <main className="content">
        <PageView route={route} canWrite={canWrite} config={config} />
      </main>
    </div>
  );
}

function PageView({ route, canWrite, config }: { route: Route; canWrite: boolean; config: ConsoleConfig }) {
  switch (route.page) {
    case 'dashboard': return <Dashboard />;
    case 'models': return <Models route={route} canWrite={canWrite} />;
    case 'pipelines': return <Pipelines route={route} canWrite={canWrite} />;
    case 'bots': return <Bots route={route} canWrite={canWrite} />;
    case 'mcp-servers': return <McpServers route={route} canWrite={canWrite} />;
    case 'queries': return <Queries route={route} traceUrlTemplate={config.traceUrlTemplate} />;
    case 'errors': return <Errors route={route} />;
    case 'sessions': return <Sessions route={route} />;
    case 'dead-letters': return <DeadLetters route={route} canWrite={canWrite} traceUrlTemplate={config.traceUrlTemplate} />;
    case 'chat': return <DebugChat route={route} />;
    case 'settings': return <Settings canWrite={canWrite} />;
    case 'users': return <Users />;
    case 'tokens': return <Tokens />;
    case 'audit': return <Audit route={route} />;
    case 'knowledge-bases': return <KnowledgeBases route={route} canWrite={canWrite} />;
    case 'plugins': return <Plugins route={route} canWrite={canWrite} />;
    case 'skills': return <Skills route={route} canWrite={canWrite} />;
    case 'workspaces': return <Workspaces canWrite={canWrite} />;
    case 'live': return <Live route={route} canWrite={canWrite} />;
  }
}
