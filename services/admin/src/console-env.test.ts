import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConsoleEnv } from './console-env.js';

test('the console settings default to Jaeger trace links and no debug chat', () => {
  const env = ConsoleEnv.parse({ ADMIN_INGRESS_URL: '', WEBCHAT_TOKEN: '' });
  assert.equal(env.CONSOLE_TRACE_URL_TEMPLATE, 'http://localhost:16686/trace/{traceId}');
  assert.equal(env.ADMIN_INGRESS_URL, undefined, 'an empty value is unset');
  assert.equal(env.WEBCHAT_TOKEN, undefined);
});

test('a trace template without {traceId}, an ingress URL that is not http, or a short web chat token is refused by name', () => {
  const issues = ConsoleEnv.safeParse({ CONSOLE_TRACE_URL_TEMPLATE: 'http://jaeger/search', ADMIN_INGRESS_URL: 'ftp://ingress', WEBCHAT_TOKEN: 'short' });
  assert.equal(issues.success, false);
  const messages = issues.error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('\n') ?? '';
  assert.match(messages, /CONSOLE_TRACE_URL_TEMPLATE: CONSOLE_TRACE_URL_TEMPLATE must contain \{traceId\}/);
  assert.match(messages, /ADMIN_INGRESS_URL:/);
  assert.match(messages, /WEBCHAT_TOKEN: WEBCHAT_TOKEN needs at least 16 characters/);
});
