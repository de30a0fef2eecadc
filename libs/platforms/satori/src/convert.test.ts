import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chainToContent, contentToChain, escapeText, unescapeText } from './elements.js';
import { SatoriMessageEvent, messageToQuery } from './convert.js';
import { parseSatoriConfig } from './config.js';

const SELF = '900';
const BOT = 'conveyor-bot';

test('content elements as a chain: text unescaped, the bot\'s at its At, others\' Ats, at all, images; a quote left out', () => {
  const chain = contentToChain('<quote id="q1"><author id="5"/>old &amp; text</quote><at id="900"/> hi &lt;b&gt; <at id="77" name="bob"/><at type="all"/><img src="https://x/y.png"/>', SELF, BOT);
  assert.deepEqual(chain, [
    { type: 'At', target: BOT, display: '' },
    { type: 'Plain', text: ' hi <b> ' },
    { type: 'At', target: '77', display: 'bob' },
    { type: 'AtAll' },
    { type: 'Image', image_id: '', url: 'https://x/y.png', path: '', base64: '' },
  ]);
  assert.deepEqual(contentToChain('plain only', SELF, BOT), [{ type: 'Plain', text: 'plain only' }]);
  assert.equal(unescapeText('&#60;&#x3e;&amp;&bogus;'), '<>&&bogus;');
});

test('a reply chain as content: text escaped, mentions as at elements', () => {
  assert.equal(chainToContent([{ type: 'At', target: '77', display: '' }, { type: 'Plain', text: ' 1 < 2 & "q"' }]), '<at id="77"/> 1 &lt; 2 &amp; &quot;q&quot;');
  assert.equal(escapeText('<at id="1"/>'), '&lt;at id=&quot;1&quot;/&gt;');
  assert.equal(chainToContent([{ type: 'Plain', text: '  ' }]), '');
});

test('a direct channel is a person query; a text channel a group query named after it; the message id is the dedup id', () => {
  const base = { type: 'message-created', timestamp: 1_700_000_000_000, user: { id: '42', name: 'alice' }, message: { id: 'm1', content: 'hi' } };
  const dm = messageToQuery(SatoriMessageEvent.parse({ ...base, channel: { id: 'private:42', type: 1 } }), SELF, BOT);
  assert.equal(dm.launcherType, 'person');
  assert.equal(dm.sessionId, 'private:42');
  assert.equal(dm.groupName, undefined);
  const group = messageToQuery(SatoriMessageEvent.parse({ ...base, channel: { id: 'c1', type: 0, name: 'general' }, member: { nick: 'Ali' } }), SELF, BOT);
  assert.equal(group.launcherType, 'group');
  assert.equal(group.groupName, 'general');
  assert.equal(group.senderName, 'Ali');
  assert.equal(group.dedupId, 'm1');
  assert.deepEqual(group.messageChain[0], { type: 'Source', id: 'm1', timestamp: 1_700_000_000 });
  assert.equal(SatoriMessageEvent.safeParse({ ...base, channel: {} }).success, false);
});

test('config: the endpoint defaults to a local Satori server and loses its trailing slash; the token is optional', () => {
  assert.equal(parseSatoriConfig({}).endpoint, 'http://127.0.0.1:5500');
  assert.equal(parseSatoriConfig({ endpoint: 'http://satori:5500/' }).endpoint, 'http://satori:5500');
  assert.throws(() => parseSatoriConfig({ endpoint: 'ws://x' }), /endpoint/);
});
