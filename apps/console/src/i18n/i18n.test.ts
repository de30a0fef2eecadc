import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { PipelineConfigSchema } from '@conveyor/pipeline/config';
import { buildFields, fieldLabelKey, optionLabelKey, type FieldNode } from '../lib/schema-form.js';
import { CATALOGS, LOCALES, createTranslator, detectLocale, placeholdersOf, type PluralForms } from './i18n.js';

const texts = (m: string | PluralForms): string[] => (typeof m === 'string' ? [m] : Object.values(m).filter((v): v is string => typeof v === 'string'));

describe('message catalogs', () => {
  const en: Record<string, string | PluralForms> = CATALOGS.en;

  test('every language has exactly the English keys, none of them empty, with the same placeholders', () => {
    for (const locale of LOCALES) {
      const catalog: Record<string, string | PluralForms> = CATALOGS[locale];
      assert.deepEqual(Object.keys(catalog).sort(), Object.keys(en).sort(), `${locale}: the keys`);
      for (const [key, message] of Object.entries(catalog)) {
        for (const text of texts(message)) assert.notEqual(text.trim(), '', `${locale} ${key} is empty`);
        const reference = new Set(texts(en[key]).flatMap(placeholdersOf));
        for (const text of texts(message)) {
          for (const p of placeholdersOf(text)) assert.ok(reference.has(p) || p === 'count', `${locale} ${key}: {${p}} is not in English`);
        }
        if (typeof en[key] === 'string') assert.deepEqual(placeholdersOf(texts(message)[0]), placeholdersOf(texts(en[key])[0]), `${locale} ${key}: the placeholders`);
        assert.equal(typeof message, typeof en[key], `${locale} ${key}: plural forms where English has them`);
      }
    }
  });

  test('the catalogs in a non-Latin script have no English words: every message is in the language or only names, symbols and placeholders', () => {
    // Product, protocol and format names and units that such UIs keep as they are (LangBot's own labels do too).
    const kept = /^(Conveyor|LangBot|OpenAI|Anthropic|Gemini|Ollama|AI|MCP|API|JSON|URL|ID|HTTP|CSV|Agent|Dify|n8n|Langflow|WeKnora|DeerFlow|Jaeger|base64|DashScope|Alibaba|Tbox|Coze|Skills?|Webhook|Token|POST|zip|MB|ms|p50|p95|p99)$/;
    const foreign: string[] = [];
    for (const locale of ['zh-Hans', 'zh-Hant', 'ja', 'ko', 'ru'] as const) {
      for (const [key, message] of Object.entries(CATALOGS[locale])) {
        for (const text of texts(message)) {
          // The example URL of the base URL hint is an address, and a setting's name (INGRESS_PUBLIC_URL) an identifier, not words.
          const words = text.replace(/\{[A-Za-z0-9]+\}/g, '').replace(/https?:\/\/\S+/g, '').replace(/\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/g, '').match(/[A-Za-z][A-Za-z0-9]*/g) ?? [];
          foreign.push(...words.filter((w) => !kept.test(w)).map((w) => `${locale} ${key}: ${w}`));
        }
      }
    }
    assert.deepEqual(foreign, []);
  });

  test('each catalog is in its own script: no Han or kana in Korean, Russian or Vietnamese, no Hangul or Cyrillic in Chinese or Japanese', () => {
    const scripts = { han: /[\u3400-\u9fff]/, kana: /[\u3040-\u30ff]/, hangul: /[\uac00-\ud7af]/, cyrillic: /[\u0400-\u04ff]/ };
    const foreign: Record<string, (keyof typeof scripts)[]> = { en: ['han', 'kana', 'hangul', 'cyrillic'], vi: ['han', 'kana', 'hangul', 'cyrillic'], 'zh-Hans': ['kana', 'hangul', 'cyrillic'], 'zh-Hant': ['kana', 'hangul', 'cyrillic'], ja: ['hangul', 'cyrillic'], ko: ['han', 'kana', 'cyrillic'], ru: ['han', 'kana', 'hangul'] };
    const wrong: string[] = [];
    for (const locale of LOCALES) {
      for (const [key, message] of Object.entries(CATALOGS[locale])) {
        for (const text of texts(message)) if (foreign[locale]!.some((s) => scripts[s].test(text))) wrong.push(`${locale} ${key}: ${text}`);
      }
    }
    assert.deepEqual(wrong, []);
  });

  test('every key of the pipeline config and every choice of its enums has a label in each language', () => {
    const root = buildFields(z.toJSONSchema(PipelineConfigSchema, { io: 'output', unrepresentable: 'any' }));
    const wanted: string[] = [];
    const walk = (node: FieldNode) => {
      if (node.path.length) wanted.push(fieldLabelKey(node.path));
      for (const o of node.options ?? []) wanted.push(optionLabelKey(node.path, o));
      for (const f of node.itemFields ?? []) wanted.push(fieldLabelKey([...node.path, f.key]));
      for (const c of node.children ?? []) walk(c);
    };
    walk(root);
    assert.ok(wanted.length > 50, 'the walk found the config keys');
    for (const locale of LOCALES) {
      const t = createTranslator(locale);
      const missing = wanted.filter((k) => t.lookup(k) === undefined);
      assert.deepEqual(missing, [], `${locale}: labels missing`);
    }
  });
});

describe('choosing the language', () => {
  test("the stored choice, else the browser's first language the console has, else Simplified Chinese", () => {
    assert.equal(detectLocale('en', ['zh-CN']), 'en');
    assert.equal(detectLocale('zh-Hans', ['en-US']), 'zh-Hans');
    assert.equal(detectLocale(null, ['en-GB', 'zh-CN']), 'en');
    assert.equal(detectLocale(null, ['zh-TW']), 'zh-Hant');
    assert.equal(detectLocale(null, ['zh-Hant-HK']), 'zh-Hant');
    assert.equal(detectLocale(null, ['zh-Hans-TW']), 'zh-Hans');
    assert.equal(detectLocale(null, ['zh']), 'zh-Hans');
    assert.equal(detectLocale(null, ['de-DE', 'ja-JP']), 'ja');
    assert.equal(detectLocale(null, ['ko']), 'ko');
    assert.equal(detectLocale(null, ['ru-RU']), 'ru');
    assert.equal(detectLocale(null, ['vi-VN', 'en']), 'vi');
    assert.equal(detectLocale('ja', ['en']), 'ja');
    assert.equal(detectLocale(null, ['fr-FR', 'en']), 'en');
    assert.equal(detectLocale('klingon', ['de-DE']), 'zh-Hans');
    assert.equal(detectLocale(null, []), 'zh-Hans');
  });
});

describe('formatting', () => {
  test('placeholders are filled, numbers in the locale, plurals by count', () => {
    const en = createTranslator('en');
    const zh = createTranslator('zh-Hans');
    assert.equal(en.t('users.roleChanged', { username: 'ana', role: en.t('role.admin') }), 'ana is now admin.');
    assert.equal(zh.t('users.roleChanged', { username: 'ana', role: zh.t('role.admin') }), 'ana 现在是管理员。');
    assert.equal(en.t('dashboard.rateHint', { total: 12345 }), '12,345 in the last hour');
    assert.equal(en.t('pipelines.problems', { count: 1, list: 'a: b' }), '1 problem: a: b');
    assert.equal(en.t('pipelines.problems', { count: 3, list: 'a: b' }), '3 problems: a: b');
    assert.equal(zh.t('pipelines.problems', { count: 3, list: 'a: b' }), '3 个问题：a: b');
  });
  test('Russian plurals: one, few and many by count', () => {
    const ru = createTranslator('ru');
    const forms = [1, 3, 5, 21, 22, 25].map((count) => ru.t('pipelines.problems', { count, list: 'x' }));
    assert.equal(new Set(forms.map((f) => f.replace(/\d+/, 'N'))).size, 3, forms.join(' | '));
    assert.equal(forms[0]!.replace('1', '21'), forms[3], 'one: 1 and 21 alike');
    assert.equal(forms[1]!.replace('3', '22'), forms[4], 'few: 3 and 22 alike');
    assert.equal(forms[2]!.replace('5', '25'), forms[5], 'many: 5 and 25 alike');
  });
  test('durations and dates with Intl for the locale', () => {
    const en = createTranslator('en');
    const zh = createTranslator('zh-Hans');
    assert.equal(en.duration(850), '850 ms');
    assert.equal(en.duration(1250), '1.25 s');
    assert.equal(zh.duration(850), '850 毫秒');
    assert.equal(zh.duration(12_340), '12.3 秒');
    assert.equal(en.duration(null), '—');
    assert.equal(en.dateTime(null), '—');
    assert.equal(en.dateTime('not a date'), 'not a date');
    const at = '2026-03-04T05:06:07.000Z';
    assert.equal(zh.dateTime(at), new Intl.DateTimeFormat('zh-Hans', { dateStyle: 'medium', timeStyle: 'medium' }).format(new Date(at)));
    assert.match(zh.dateTime(at), /2026年3月/);
  });
  test('a key only known at run time: its message, or undefined', () => {
    const zh = createTranslator('zh-Hans');
    assert.equal(zh.lookup('cfgopt.trigger.access-control.mode.blacklist'), '黑名单');
    assert.equal(zh.lookup('cfg.no-such-key'), undefined);
  });
});
