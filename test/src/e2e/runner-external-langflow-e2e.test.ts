import { startFakeLangflow } from '../fakes/external-runner-apis.js';
import { answer, describeRunner } from './external-runner-e2e-support.js';

/** `langflow-api` through the whole system against a fake of its HTTP API (see describeRunner). */
describeRunner('langflow-api', {
  start: () => startFakeLangflow({ apiKey: 'runner-secret', flowId: 'flow-1', answer }),
  pipeline: (f) => ({ 'base-url': f.url, 'api-key': 'runner-secret', 'flow-id': 'flow-1' }),
  // Langflow takes the caller's session id: the first request's names the conversation.
  conversationOf: (body) => body.session_id,
  firstConversation: (f) => f.requests[0].body.session_id,
  queryOf: (body) => body.input_value,
  authError: /^langflow-api failed: Langflow answered HTTP 403/,
});
