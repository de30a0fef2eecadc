// Sign-in, and the first admin's creation with the one-time setup token the admin service logs.
import { useState, type FormEvent } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { request } from './lib/api.js';
import { ErrorNote, Field, useAction } from './ui.js';
import { LanguageSwitch, useI18n } from './i18n/react.js';

export function SignIn({ setupRequired, onSignedIn }: { setupRequired: boolean; onSignedIn: (me: AdminApi.Me) => void }) {
  const [username, setUsername] = useState(setupRequired ? 'admin' : '');
  const [password, setPassword] = useState('');
  // The setup link carries the token in its fragment (`#token=…`), which the browser never sends.
  const [token, setToken] = useState(() => new URLSearchParams(location.hash.replace(/^#\/?/, '').split('?').pop() ?? '').get('token') ?? '');
  const action = useAction();
  const { t } = useI18n();

  const submit = (e: FormEvent) => {
    e.preventDefault();
    void action.run(async () => {
      const me = setupRequired
        ? await request('POST', '/auth/setup', AdminApi.Me, { body: { token, username, password } })
        : await request('POST', '/auth/login', AdminApi.Me, { body: { username, password } });
      if (setupRequired) history.replaceState(null, '', location.pathname);
      onSignedIn(me);
    });
  };

  return (
    <main className="signin">
      <LanguageSwitch />
      <form onSubmit={submit} aria-label={setupRequired ? t('auth.formSetup') : t('auth.formSignIn')}>
        <h1>{t('app.title')}</h1>
        <p>{setupRequired ? t('auth.setupIntro') : t('auth.signInIntro')}</p>
        {setupRequired ? (
          <Field label={t('auth.setupToken')} htmlFor="setup-token">
            <input id="setup-token" value={token} onChange={(e) => setToken(e.target.value)} autoComplete="off" required />
          </Field>
        ) : null}
        <Field label={t('auth.username')} htmlFor="username">
          <input id="username" name="username" value={username} onChange={(e) => setUsername(e.target.value)} autoComplete="username" required />
        </Field>
        <Field label={t('auth.password')} htmlFor="password" hint={setupRequired ? t('auth.passwordHint') : undefined}>
          <input id="password" name="password" type="password" value={password} onChange={(e) => setPassword(e.target.value)} autoComplete={setupRequired ? 'new-password' : 'current-password'} required />
        </Field>
        <button type="submit" disabled={action.busy}>{action.busy ? t('auth.signingIn') : setupRequired ? t('auth.createAdmin') : t('auth.signIn')}</button>
        <ErrorNote error={action.error} />
      </form>
    </main>
  );
}
