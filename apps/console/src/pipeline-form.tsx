// The pipeline config form, rendered from the field tree of the config schema (lib/schema-form.ts).
// Each key is labelled in the reader's language (LangBot's own labels) with LangBot's key beside it,
// since that is the name conveyor.yaml and the raw JSON use.
import { useMemo, useState } from 'react';
import { z } from 'zod';
import { AdminApi } from '@conveyor/contracts';
import { PipelineConfigSchema } from '@conveyor/pipeline/config';
import { listAll } from './lib/api.js';
import { buildFields, fieldLabelKey, getAt, isRecord, jsonOrText, linesToList, numberInput, optionLabelKey, setAt, type FieldNode } from './lib/schema-form.js';
import type { Translator } from './i18n/i18n.js';
import { useI18n } from './i18n/react.js';
import { ErrorNote, useLoad } from './ui.js';

/** The form's field tree, built once from the pipeline config schema. */
export function usePipelineFields(): FieldNode {
  return useMemo(() => buildFields(z.toJSONSchema(PipelineConfigSchema, { io: 'output', unrepresentable: 'any' })), []);
}

function inputId(path: readonly string[]): string {
  return `cfg-${path.join('.')}`;
}

/** The label, then LangBot's key in code type (left untranslated). */
function KeyLabel({ i18n, path, name }: { i18n: Translator; path: readonly string[]; name: string }) {
  const label = i18n.lookup(fieldLabelKey(path));
  return <>{label ? <>{label} </> : null}<span className="mono cfg-key" translate="no">{name}</span></>;
}

export function ConfigForm({ root, value, onChange, issues, disabled }: { root: FieldNode; value: unknown; onChange: (next: unknown) => void; issues: Map<string, string>; disabled: boolean }) {
  return (
    <div className="config-form">
      {root.children?.map((section) => <FieldView key={section.key} node={section} value={value} onChange={onChange} issues={issues} disabled={disabled} depth={0} />)}
    </div>
  );
}

function FieldView({ node, value, onChange, issues, disabled, depth }: { node: FieldNode; value: unknown; onChange: (next: unknown) => void; issues: Map<string, string>; disabled: boolean; depth: number }) {
  const current = getAt(value, node.path);
  const set = (v: unknown) => onChange(setAt(value, node.path, v));
  const issue = issues.get(node.path.join('.'));
  const id = inputId(node.path);
  const i18n = useI18n();
  const { t } = i18n;
  if (node.kind === 'object') {
    const children = node.children ?? [];
    return (
      <details className={`group depth-${depth}`} open={depth < 1} data-path={node.path.join('.')}>
        <summary><KeyLabel i18n={i18n} path={node.path} name={node.key} /></summary>
        {issue ? <div className="field-issue">{issue}</div> : null}
        {children.map((c) => <FieldView key={c.key} node={c} value={value} onChange={onChange} issues={issues} disabled={disabled} depth={depth + 1} />)}
      </details>
    );
  }
  let input;
  switch (node.kind) {
    case 'boolean':
      input = <input id={id} type="checkbox" checked={current === true} disabled={disabled} onChange={(e) => set(e.target.checked)} />;
      break;
    case 'enum':
      input = (
        <select id={id} value={typeof current === 'string' ? current : ''} disabled={disabled} onChange={(e) => set(e.target.value)}>
          {typeof current !== 'string' || !node.options?.includes(current) ? <option value={typeof current === 'string' ? current : ''}>{typeof current === 'string' ? current : t('common.unset')}</option> : null}
          {node.options?.map((o) => <option key={o} value={o}>{i18n.lookup(optionLabelKey(node.path, o)) ?? o}</option>)}
        </select>
      );
      break;
    case 'integer':
    case 'number': {
      const kind = node.kind;
      input = <input id={id} type="text" inputMode="decimal" value={current === undefined ? '' : String(current)} disabled={disabled} onChange={(e) => set(e.target.value === '' && node.optional ? undefined : numberInput(e.target.value, kind))} />;
      break;
    }
    case 'string':
      input = <StringInput id={id} value={current} disabled={disabled} onChange={(v) => set(v === '' && node.optional ? undefined : v)} />;
      break;
    case 'string-list':
      input = <ListInput id={id} value={current} disabled={disabled} onChange={set} />;
      break;
    case 'object-list':
      input = <ObjectListInput id={id} node={node} value={current} disabled={disabled} onChange={set} i18n={i18n} />;
      break;
    case 'json':
      input = <JsonInput id={id} value={current} disabled={disabled} onChange={(v) => set(v === '' && node.optional ? undefined : v)} />;
      break;
  }
  return (
    <div className={`field cfg ${issue ? 'invalid' : ''}`}>
      <label htmlFor={id}><KeyLabel i18n={i18n} path={node.path} name={node.key} />{node.optional ? ` ${t('common.optional')}` : ''}</label>
      {input}
      {node.min !== undefined || node.max !== undefined ? <small className="hint">{node.min !== undefined ? `≥ ${node.min}` : ''}{node.max !== undefined ? ` ≤ ${node.max}` : ''}</small> : null}
      {issue ? <div className="field-issue">{issue}</div> : null}
    </div>
  );
}

function StringInput({ id, value, disabled, onChange }: { id: string; value: unknown; disabled: boolean; onChange: (v: string) => void }) {
  const text = typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value);
  return text.length > 60 || text.includes('\n')
    ? <textarea id={id} rows={3} value={text} disabled={disabled} onChange={(e) => onChange(e.target.value)} />
    : <input id={id} type="text" value={text} disabled={disabled} onChange={(e) => onChange(e.target.value)} />;
}

/** One item per line. Kept as typed text while focused, so a trailing newline survives. */
function ListInput({ id, value, disabled, onChange }: { id: string; value: unknown; disabled: boolean; onChange: (v: string[]) => void }) {
  const joined = Array.isArray(value) ? value.map(String).join('\n') : '';
  const [text, setText] = useState<string | null>(null);
  const { t } = useI18n();
  return (
    <textarea id={id} rows={Math.min(6, Math.max(2, joined.split('\n').length))} placeholder={t('pipelines.listPlaceholder')} value={text ?? joined} disabled={disabled}
      onFocus={() => setText(joined)} onBlur={() => setText(null)}
      onChange={(e) => { setText(e.target.value); onChange(linesToList(e.target.value)); }} />
  );
}

function JsonInput({ id, value, disabled, onChange }: { id: string; value: unknown; disabled: boolean; onChange: (v: unknown) => void }) {
  const shown = typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value);
  const [text, setText] = useState<string | null>(null);
  const { t } = useI18n();
  return (
    <input id={id} type="text" className="mono" value={text ?? shown} disabled={disabled} placeholder={t('pipelines.jsonPlaceholder')}
      onFocus={() => setText(shown)} onBlur={() => setText(null)}
      onChange={(e) => { setText(e.target.value); onChange(jsonOrText(e.target.value)); }} />
  );
}

/** A list of objects (the prompt's messages): one row per item, the item's fields side by side. */
function ObjectListInput({ id, node, value, disabled, onChange, i18n }: { id: string; node: FieldNode; value: unknown; disabled: boolean; onChange: (v: unknown[]) => void; i18n: Translator }) {
  const items = Array.isArray(value) ? value : [];
  const fields = node.itemFields ?? [];
  const update = (i: number, next: unknown) => onChange(items.map((it, j) => (j === i ? next : it)));
  return (
    <div className="object-list" id={id}>
      {items.map((item, i) => (
        <div className="object-row" key={i}>
          {fields.map((f) => {
            const v = isRecord(item) ? item[f.key] : undefined;
            const fid = `${id}.${i}.${f.key}`;
            return (
              <label key={f.key}>
                <KeyLabel i18n={i18n} path={[...node.path, f.key]} name={f.key} />
                {f.key === 'content'
                  ? <textarea id={fid} rows={3} value={typeof v === 'string' ? v : ''} disabled={disabled} onChange={(e) => update(i, setAt(item, [f.key], e.target.value))} />
                  : <input id={fid} value={typeof v === 'string' ? v : ''} disabled={disabled} onChange={(e) => update(i, setAt(item, [f.key], e.target.value))} />}
              </label>
            );
          })}
          <button type="button" className="link" disabled={disabled} onClick={() => onChange(items.filter((_, j) => j !== i))}>{i18n.t('pipelines.remove')}</button>
        </div>
      ))}
      <button type="button" disabled={disabled} onClick={() => onChange([...items, Object.fromEntries(fields.map((f) => [f.key, f.key === 'role' ? 'system' : '']))])}>{i18n.t('pipelines.add')}</button>
    </div>
  );
}

/** The extensions preferences as typed (JSON text), or undefined while they are not a JSON object. */
function parsePrefs(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return isRecord(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The pipeline's Agent Skills binding (LangBot's `extensions_preferences.enable_all_skills` and
 * `skills`): every installed skill, or those picked from the installed ones. It edits the extensions
 * preferences' JSON, so the raw text and this stay one value.
 */
export function SkillsBinding({ prefs, onChange, disabled }: { prefs: string; onChange: (next: string) => void; disabled: boolean }) {
  const installed = useLoad((signal) => listAll('/skills', AdminApi.Skill, { signal }), []);
  const { t } = useI18n();
  const parsed = parsePrefs(prefs);
  const all = parsed ? parsed.enable_all_skills !== false : true;
  const chosen = parsed && Array.isArray(parsed.skills) ? parsed.skills.filter((n): n is string => typeof n === 'string') : [];
  const write = (next: Record<string, unknown>) => onChange(JSON.stringify({ ...parsed, ...next }, null, 2));
  const toggle = (name: string, on: boolean) => write({ enable_all_skills: false, skills: on ? [...new Set([...chosen, name])] : chosen.filter((n) => n !== name) });
  const names = installed.data?.items.map((s) => s.name) ?? [];
  // A bound name no skill has now (deleted since) stays listed, so it can be unbound.
  const missing = chosen.filter((n) => !names.includes(n));
  return (
    <fieldset className="skills-binding" id="pipeline-skills" disabled={disabled || !parsed}>
      <legend>{t('pipelines.skills')}</legend>
      {!parsed ? <p className="hint">{t('pipelines.skillsPrefsInvalid')}</p> : null}
      <label className="inline"><input id="pipeline-skills-all" type="checkbox" checked={all} onChange={(e) => write({ enable_all_skills: e.target.checked, skills: chosen })} /> {t('pipelines.skillsAll')}</label>
      {!all ? (
        <ul className="skill-choices">
          {installed.data?.items.map((s) => (
            <li key={s.name}>
              <label className="inline"><input type="checkbox" data-skill={s.name} checked={chosen.includes(s.name)} onChange={(e) => toggle(s.name, e.target.checked)} /> <span className="mono" translate="no">{s.name}</span> <small translate="no">{s.description}</small></label>
            </li>
          ))}
          {missing.map((n) => (
            <li key={n}>
              <label className="inline"><input type="checkbox" data-skill={n} checked onChange={() => toggle(n, false)} /> <span className="mono" translate="no">{n}</span> <small>{t('pipelines.skillMissing')}</small></label>
            </li>
          ))}
          {installed.data && installed.data.items.length === 0 && missing.length === 0 ? <li className="hint">{t('pipelines.noSkills')}</li> : null}
        </ul>
      ) : null}
      <ErrorNote error={installed.error} />
    </fieldset>
  );
}
