import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createLogger } from './logger.js';

/** A logger writing into an array, one parsed JSON object per line. */
function capture(level = 'debug') {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  return { logger: createLogger('logger-test', { level }, stream), lines };
}

const credentialHeaders = {
  authorization: 'Bearer LEAK-authorization',
  'proxy-authorization': 'Basic LEAK-proxy-authorization',
  cookie: 'session=LEAK-cookie',
  'x-api-key': 'LEAK-x-api-key',
  'x-lb-signature': 'LEAK-lb-signature',
  'x-telegram-bot-api-secret-token': 'LEAK-telegram-webhook',
  'x-slack-signature': 'v0=LEAK-slack-signature',
  'x-line-signature': 'LEAK-line-signature',
  'x-lark-signature': 'LEAK-lark-signature',
  sign: 'LEAK-dingtalk-sign',
  'x-acs-dingtalk-access-token': 'LEAK-dingtalk-access-token',
};

test('credential headers of requests and responses are written as [Redacted], other headers as they are', () => {
  const { logger, lines } = capture();
  const req = { method: 'POST', url: '/telegram/bot', headers: { 'content-type': 'application/json', ...credentialHeaders } };
  // A request may be logged as a field or as a binding of a child logger.
  logger.debug({ req, res: { statusCode: 200, headers: { 'set-cookie': 'sid=LEAK-set-cookie' } } }, 'request completed');
  logger.child({ req }).info('inside a request');

  assert.equal(lines.length, 2);
  for (const line of lines) {
    assert.doesNotMatch(line, /LEAK/, line);
    const headers = JSON.parse(line).req.headers;
    assert.equal(headers['content-type'], 'application/json');
    for (const name of Object.keys(credentialHeaders)) assert.equal(headers[name], '[Redacted]', name);
  }
  assert.equal(JSON.parse(lines[0]).res.headers['set-cookie'], '[Redacted]');
});

test('credential fields are written as [Redacted] at the top level and one level down', () => {
  const { logger, lines } = capture();
  logger.warn({ token: 'LEAK-token', botId: 'b1' }, 'top level');
  logger.warn({
    adapterConfig: { token: 'LEAK-bot-token', webhook_secret: 'LEAK-webhook', inbound_secret: 'LEAK-inbound', bot_token: 'LEAK-slack-token', signing_secret: 'LEAK-slack-secret', channel_access_token: 'LEAK-line-token', channel_secret: 'LEAK-line-secret', 'access-token': 'LEAK-onebot-token', app_secret: 'LEAK-lark-secret', AppSecret: 'LEAK-lark-ws-secret', 'encrypt-key': 'LEAK-lark-encrypt', 'verification-token': 'LEAK-lark-vtoken', EncodingAESKey: 'LEAK-wecom-aes-key', contacts_secret: 'LEAK-wecom-contacts', access_token: 'LEAK-wecom-access-token', client_secret: 'LEAK-dingtalk-secret', clientSecret: 'LEAK-dingtalk-client-secret', appSecret: 'LEAK-dingtalk-app-secret', accessToken: 'LEAK-dingtalk-token', sessionWebhook: 'https://oapi.dingtalk.com/robot/sendBySession?session=LEAK', ticket: 'LEAK-dingtalk-ticket', callback_url: 'http://cb' },
    settings: { 'api-key': 'LEAK-dify-key', apiKey: 'LEAK-model-key', api_key: 'LEAK-key', 'header-value': 'LEAK-n8n', password: 'LEAK-password', secret: 'LEAK-plain' },
  }, 'nested');

  assert.equal(lines.length, 2);
  for (const line of lines) assert.doesNotMatch(line, /LEAK/, line);
  const [top, nested] = lines.map((l) => JSON.parse(l));
  assert.deepEqual([top.token, top.botId], ['[Redacted]', 'b1']);
  assert.equal(nested.adapterConfig.callback_url, 'http://cb');
  assert.equal(nested.adapterConfig.webhook_secret, '[Redacted]');
  assert.equal(nested.settings['api-key'], '[Redacted]');
});
