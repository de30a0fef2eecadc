import { startFakeDashscope } from '../fakes/external-runner-apis.js';
import { answer, describeRunner } from './external-runner-e2e-support.js';

/** `dashscope-app-api` through the whole system against a fake of its HTTP API (see describeRunner). */
describeRunner('dashscope-app-api', {
  start: () => startFakeDashscope({ apiKey: 'runner-secret', appId: 'app-1', answer }),
  pipeline: (f) => ({ 'base-url': f.url, 'api-key': 'runner-secret', 'app-id': 'app-1', 'app-type': 'agent' }),
  conversationOf: (body) => body.input.session_id,
  firstConversation: () => 'ds-session-1',
  queryOf: (body) => body.input.prompt,
  authError: /^dashscope-app-api failed: DashScope answered HTTP 401/,
});
