import { startFakeDeerflow } from '../fakes/external-runner-apis.js';
import { answer, describeRunner } from './external-runner-e2e-support.js';

/** `deerflow-api` through the whole system against a fake of its LangGraph API (see describeRunner). */
describeRunner('deerflow-api', {
  start: () => startFakeDeerflow({ apiKey: 'runner-secret', answer }),
  pipeline: (f) => ({ 'api-base': f.url, 'api-key': 'runner-secret' }),
  // The thread is in the path: the runner opens one for a new conversation first.
  conversationOf: (_body, path) => /\/threads\/([^/]+)\/runs\/stream$/.exec(path)?.[1],
  firstConversation: () => 'df-thread-1',
  queryOf: (body) => body.input.messages.at(-1).content,
  authError: /^deerflow-api failed: DeerFlow answered HTTP 401/,
});
