import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { describeError, ApiError } from './api.js';

describe('error messages', () => {
  test('a stale write says to reload; a validation error names the field', () => {
    assert.match(describeError(new ApiError(409, 'version_conflict', 'version 2 is not current', undefined, [], 3)), /Changed by someone else.*reload/);
    assert.equal(describeError(new ApiError(400, 'validation_failed', 'invalid base URL', 'body.baseUrl')), 'invalid base URL (body.baseUrl)');
  });
});
