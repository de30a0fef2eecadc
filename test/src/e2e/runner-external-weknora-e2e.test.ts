import { startFakeWeknora } from '../fakes/external-runner-apis.js';
import { answer, describeRunner } from './external-runner-e2e-support.js';

/** `weknora-api` through the whole system against a fake of its HTTP API (see describeRunner). */
describeRunner('weknora-api', {
  start: () => startFakeWeknora({ apiKey: 'runner-secret', answer }),
  pipeline: (f) => ({ 'base-url': f.url, 'api-key': 'runner-secret', 'app-type': 'agent' }),
  // The WeKnora session is in the path: the runner opens one for a new conversation first.
  conversationOf: (_body, path) => /\/agent-chat\/([^/?]+)$/.exec(path)?.[1],
  firstConversation: () => 'wk-session-1',
  queryOf: (body) => body.query,
  authError: /^weknora-api failed: WeKnora answered HTTP 401/,
});
