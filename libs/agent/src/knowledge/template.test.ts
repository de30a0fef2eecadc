import { test } from 'node:test';
import assert from 'node:assert/strict';
import { combinedPrompt, retrievalText, withRetrievalText } from './template.js';

test("LangBot's combined prompt: numbered entries between blank lines, the question, the exact instruction lines", () => {
  assert.equal(
    combinedPrompt(['alpha', 'beta'], 'what is {user_message}?'),
    '\nThe following are relevant context entries retrieved from the knowledge base. \n' +
      "Please use them to answer the user's message. \n" +
      "Respond in the same language as the user's input.\n\n" +
      '<context>\n[1] alpha\n\n[2] beta\n</context>\n\n' +
      '<user_message>\nwhat is {user_message}?\n</user_message>\n',
  );
});

test('the first text part is the retrieval text and the one replaced; images and later text stay', () => {
  const message = {
    role: 'user' as const,
    content: [
      { type: 'image_url' as const, image_url: { url: 'data:image/png;base64,AA==' } },
      { type: 'text' as const, text: 'first' },
      { type: 'text' as const, text: 'second' },
    ],
  };
  assert.equal(retrievalText(message), 'first');
  assert.deepEqual(withRetrievalText(message, 'NEW').content, [message.content[0], { type: 'text', text: 'NEW' }, message.content[2]]);
  assert.equal(retrievalText({ content: [{ type: 'image_url', image_url: { url: 'x' } }] }), '', 'an image alone retrieves nothing');
  assert.equal(retrievalText({ content: 'plain' }), 'plain');
  assert.deepEqual(withRetrievalText({ role: 'user', content: 'plain' }, 'X'), { role: 'user', content: 'X' });
});
