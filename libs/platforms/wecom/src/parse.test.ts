import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentIdOf, parseWecomMessage, parseXmlFields, wecomReplyTo } from './parse.js';

const text = (content: string, extra = '') =>
  `<xml><ToUserName><![CDATA[ww1]]></ToUserName><FromUserName><![CDATA[zhang.san]]></FromUserName><CreateTime>1348831860</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[${content}]]></Content><MsgId>1234567890123456789</MsgId><AgentID>1000002</AgentID>${extra}</xml>`;

test('a text message is a person message of its sender; the 64-bit MsgId keeps every digit', () => {
  assert.deepEqual(parseWecomMessage(text(' hello <b>&amp; ')), {
    ok: true,
    message: { msgId: '1234567890123456789', userId: 'zhang.san', agentId: '1000002', createTime: 1348831860, messageChain: [{ type: 'Plain', text: ' hello <b>&amp; ' }] },
  });
});

test('an image message is an Image by its URL and media id', () => {
  const xml = '<xml><ToUserName>ww1</ToUserName><FromUserName>u1</FromUserName><CreateTime>1</CreateTime><MsgType>image</MsgType><PicUrl>https://p.example/x.jpg</PicUrl><MediaId>m-1</MediaId><MsgId>7</MsgId><AgentID>3</AgentID></xml>';
  const r = parseWecomMessage(xml);
  assert.ok(r.ok);
  if (r.ok) assert.deepEqual(r.message?.messageChain, [{ type: 'Image', image_id: 'm-1', url: 'https://p.example/x.jpg', path: '', base64: '' }]);
});

test('events, other message types and empty texts are skipped, saying why', () => {
  assert.deepEqual(parseWecomMessage('<xml><MsgType>event</MsgType><Event>enter_agent</Event></xml>'), { ok: true, message: null, skipped: 'MsgType event (enter_agent)' });
  assert.deepEqual(parseWecomMessage('<xml><MsgType>voice</MsgType></xml>'), { ok: true, message: null, skipped: 'MsgType voice' });
  assert.deepEqual(parseWecomMessage(text('  ')), { ok: true, message: null, skipped: 'empty text' });
});

test('a message that does not parse is malformed, naming the field; a DOCTYPE is refused', () => {
  for (const [xml, error] of [
    ['<xml><Content>unclosed', /not well-formed|MsgType/],
    ['<notxml/>', /root element/],
    ['<xml><Content>x</Content></xml>', /MsgType: missing/],
    [text('x').replace('<MsgId>1234567890123456789</MsgId>', ''), /MsgId/],
    [text('x').replace('zhang.san', 'bad user!'), /FromUserName/],
    [text('x').replace('<AgentID>1000002</AgentID>', '<AgentID>abc</AgentID>'), /AgentID/],
    ['<!DOCTYPE xml [<!ENTITY a "aaaa">]><xml><MsgType>text</MsgType></xml>', /DOCTYPE/],
  ] as const) {
    const r = parseWecomMessage(xml);
    assert.equal(r.ok, false, xml);
    if (!r.ok) assert.match(r.error, error);
  }
  assert.deepEqual(parseXmlFields('<xml><A>1</A><B><C>2</C></B><D>x &amp; &lt;y&gt;</D><E>1</E><E>2</E></xml>'), { ok: true, fields: { A: '1', D: 'x & <y>' } });
});

test('replyTo carries the agent a reply goes out through', () => {
  assert.equal(wecomReplyTo('1000002', '99'), '1000002:99');
  assert.equal(agentIdOf('1000002:99'), 1000002);
  assert.equal(agentIdOf('no-agent'), undefined);
});
