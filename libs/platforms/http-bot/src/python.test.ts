import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PythonRecursionError, pyFloatRepr, pyJsonDumps, pyRepr, pyStr, pyTruthy } from './python.js';

// Expected strings were produced by CPython 3.11.

test('float repr matches CPython, including the switch to exponent notation', () => {
  const cases: [number, string][] = [
    [1e20, '1e+20'],
    [1e-5, '1e-05'],
    [0.0001, '0.0001'],
    [123.456, '123.456'],
    [1.5e16, '1.5e+16'],
    [1e16, '1e+16'],
    [0.1, '0.1'],
    [-2.5, '-2.5'],
    [5e-324, '5e-324'],
    [1.7976931348623157e308, '1.7976931348623157e+308'],
    [12345678901234567.0, '1.2345678901234568e+16'],
  ];
  for (const [x, want] of cases) assert.equal(pyFloatRepr(x), want, String(x));
});

test('str repr picks quotes and escapes like CPython', () => {
  assert.equal(pyRepr("it's"), `"it's"`);
  assert.equal(pyRepr('a"b'), `'a"b'`);
  assert.equal(pyRepr(`both ' "`), `'both \\' "'`);
  assert.equal(
    pyRepr('tab\tnl\n\x00\x7f\x85\xa0é中\u200b😀\\'),
    "'tab\\tnl\\n\\x00\\x7f\\x85\\xa0é中\\u200b😀\\\\'",
  );
});

test('repr and str of JSON containers and scalars', () => {
  assert.equal(pyRepr({ a: [1, null, true, false, 'x'], b: {} }), "{'a': [1, None, True, False, 'x'], 'b': {}}");
  assert.equal(pyStr(123), '123');
  assert.equal(pyStr(null), 'None');
  assert.equal(pyStr(true), 'True');
  assert.equal(pyStr(1.5), '1.5');
  assert.equal(pyStr('as is'), 'as is');
});

test('repr refuses pathological nesting like Python RecursionError', () => {
  let deep: unknown = [];
  for (let i = 0; i < 500; i++) deep = [deep];
  assert.throws(() => pyRepr(deep), PythonRecursionError);
});

test('truthiness follows Python', () => {
  for (const v of [null, undefined, false, 0, '', [], {}]) assert.equal(pyTruthy(v), false, JSON.stringify(v));
  for (const v of [true, 1, -1, 'false', '0', [0], { a: 0 }]) assert.equal(pyTruthy(v), true, JSON.stringify(v));
});

test('json.dumps(ensure_ascii=False) escaping and separators', () => {
  const got = pyJsonDumps({
    s: 'q"b\\ \x00\x1f\x7f\b\f\n\r\t é中 \u2028 😀',
    n: [1, -0, 1.5, 1e-7, null, true, [], {}],
  });
  assert.equal(
    got,
    '{"s": "q\\"b\\\\ \\u0000\\u001f\x7f\\b\\f\\n\\r\\t é中 \u2028 😀", "n": [1, 0, 1.5, 1e-07, null, true, [], {}]}',
  );
});

test('integral numbers render as Python ints, since JSON.parse cannot keep 1e20 apart from 100000000000000000000', () => {
  assert.equal(pyJsonDumps(1e20), '100000000000000000000');
  assert.equal(pyRepr(2 ** 60), '1152921504606846976');
});
