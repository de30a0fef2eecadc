import { startFakeCoze } from '../fakes/external-runner-apis.js';
import { answer, describeRunner } from './external-runner-e2e-support.js';

/** `coze-api` through the whole system against a fake of its HTTP API (see describeRunner). */
describeRunner('coze-api', {
  start: () => startFakeCoze({ apiKey: 'runner-secret', answer }),
  pipeline: (f) => ({ 'api-base': f.url, 'api-key': 'runner-secret', 'bot-id': 'bot-7', timeout: 30 }),
  conversationOf: (_body, path) => new URL(path, 'http://x').searchParams.get('conversation_id') ?? undefined,
  firstConversation: () => 'coze-conv-1',
  queryOf: (body) => body.additional_messages[0].content,
  authError: /^coze-api failed: Coze answered HTTP 401/,
});
