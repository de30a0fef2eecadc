// Sign-in, and the first admin's creation with the one-time setup token the admin service logs.
import { useState, type FormEvent } from 'react';
import { AdminApi } from '@conveyor/contracts';
import { request } from './lib/api.js';
import { ErrorNote, Field, useAction } from './ui.js';

export function SignIn({ setupRequired, onSignedIn }: { setupRequired: boolean; onSignedIn: (me: AdminApi.Me) => void }) {
  const [username, setUsername] = useState(setupRequired ? 'admin' : '');
  const [password, setPassword] = useState('');
  // The setup link carries the token in its fragment (`#token=…`), which the browser never sends.
  const [token, setToken] = useState(() => new URLSearchParams(location.hash.replace(/^#\/?/, '').split('?').pop() ?? '').get('token') ?? '');
  const action = useAction();

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
      <form onSubmit={submit} aria-label={setupRequired ? 'Create the first admin' : 'Sign in'}>
        <h1>Conveyor console</h1>
        <p>{setupRequired ? 'No admin exists yet. Use the setup token from the admin service log to create one.' : 'Sign in to manage models, pipelines and bots.'}</p>
        {setupRequired ? (
          <Field label="Setup token" htmlFor="setup-token">
            <input id="setup-token" value={token} onChange={(e) => setToken(e.target.value)} autoComplete="off" required />
          </Field>
        ) : null}
        <Field label="Username" htmlFor="username">
          <input id="username" name="username" value={username} onChange={(e) => setUsername(e.target.value)} autoComplete="username" required />
        </Field>
        <Field label="Password" htmlFor="password" hint={setupRequired ? 'At least 12 characters.' : undefined}>
          <input id="password" name="password" type="password" value={password} onChange={(e) => setPassword(e.target.value)} autoComplete={setupRequired ? 'new-password' : 'current-password'} required />
        </Field>
        <button type="submit" disabled={action.busy}>{action.busy ? 'Signing in…' : setupRequired ? 'Create admin and sign in' : 'Sign in'}</button>
        <ErrorNote error={action.error} />
      </form>
    </main>
  );
}
