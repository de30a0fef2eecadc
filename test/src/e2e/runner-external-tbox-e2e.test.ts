import { startFakeTbox } from '../fakes/tbox-server.js';
import { answer, describeRunner } from './external-runner-e2e-support.js';

/** `tbox-app-api` through the whole system against a fake of its HTTP API (see describeRunner). */
describeRunner('tbox-app-api', {
  start: () => startFakeTbox({ apiKey: 'runner-secret', appId: 'app-1', answer }),
  pipeline: (f) => ({ 'base-url': f.url, 'api-key': 'runner-secret', 'app-id': 'app-1' }),
  conversationOf: (body) => body.conversationId,
  firstConversation: () => 'tbox-conv-1',
  queryOf: (body) => body.query,
  authError: /^tbox-app-api failed: Tbox answered HTTP 401: 401 invalid authorization/,
});
