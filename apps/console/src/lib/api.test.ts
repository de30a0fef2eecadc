import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { describeError, ApiError } from './api.js';
import { createTranslator } from '../i18n/i18n.js';

const en = createTranslator('en');
const zh = createTranslator('zh-Hans');

describe('error messages', () => {
  test('a stale write says to reload; a validation error names the field', () => {
    assert.match(describeError(new ApiError(409, 'version_conflict', 'version 2 is not current', undefined, [], 3), en), /Changed by someone else.*reload/);
    assert.equal(describeError(new ApiError(400, 'validation_failed', 'invalid base URL', 'body.baseUrl'), en), 'Invalid input: invalid base URL (body.baseUrl)');
  });
  test("in Chinese: the console's own errors are translated; the API's message follows the code's meaning as it was sent", () => {
    assert.equal(describeError(new ApiError(409, 'version_conflict', 'version 2 is not current', undefined, [], 3), zh), '自您打开后已被他人修改：请重新加载，然后再次修改。');
    assert.equal(describeError(new ApiError(400, 'validation_failed', 'invalid base URL', 'body.baseUrl'), zh), '输入无效：invalid base URL (body.baseUrl)');
    assert.equal(describeError(new ApiError(429, 'rate_limited', 'too many failed sign-ins', undefined, [], undefined, 30), zh), '尝试次数过多：too many failed sign-ins 请在 30 秒后重试。');
    assert.equal(describeError(new ApiError(0, 'network', 'unreachable', undefined, [], undefined, undefined, { method: 'GET', path: '/bots', detail: 'Failed to fetch' }), zh), '无法连接管理服务（Failed to fetch）。');
    assert.equal(describeError(new ApiError(502, 'internal', 'HTTP 502 from GET /bots', undefined, [], undefined, undefined, { method: 'GET', path: '/bots' }), en), 'HTTP 502 from GET /bots');
  });
});
