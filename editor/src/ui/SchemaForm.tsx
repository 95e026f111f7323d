/**
 * A form generated from a JSON Schema (a kind's TypeBox `configSchema`, or an edge config
 * schema). Fields that the kind declares as model, MCP server or node references become pickers
 * fed by the flow, so a reference can only name something that exists.
 */

import { setOwn } from '@switchboard/schemas/core';
import { useId } from 'react';
import { isConditionSchema, pathMatches } from '../model/conditionBuilder.js';
import type { RouteChoice } from '../model/routes.js';
import { fieldsOf, initialValue, type JsonSchema, widgetFor } from '../model/schemaForm.js';
import { ConditionField } from './ConditionBuilder.js';
import { Help, JsonEditor, SharedTextInput, StringListEditor, TemplateEditor } from './fields.js';
import { RouteField } from './RouteField.js';

export interface RefChoices {
  models: string[];
  servers: string[];
  nodes: Array<{ id: string; label: string }>;
  modelRefs: ReadonlySet<string>;
  serverRefs: ReadonlySet<string>;
  nodeRefs: ReadonlySet<string>;
  /** Edges this node can route to, for its route fields (`rules.*.to`, `default`). */
  routes: () => RouteChoice[];
  /** Patterns of the config paths that are route fields (`*` for a list index). */
  routeRefs: readonly string[];
}

type OnChange = (v: unknown, typing: boolean) => void;

export function humanize(key: string): string {
  const s = key.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/[_-]/g, ' ');
  return s.charAt(0).toUpperCase() + s.slice(1);
}

const tid = (path: string) => `cfg-${path.replace(/\./g, '-')}`;

function clean(obj: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) if (v !== undefined) setOwn(out, k, v);
  return out;
}

function RefSelect(props: {
  label: string;
  value: unknown;
  options: Array<{ id: string; label: string }>;
  required: boolean;
  onChange: OnChange;
  testid: string;
  help?: string;
}) {
  const id = useId();
  const v = typeof props.value === 'string' ? props.value : '';
  const known = props.options.some((o) => o.id === v);
  return (
    <div className="sb-field">
      <label htmlFor={id}>{props.label}</label>
      <select
        id={id}
        value={v}
        data-testid={props.testid}
        onChange={(e) =>
          props.onChange(e.target.value === '' && !props.required ? undefined : e.target.value, false)
        }
      >
        <option value="">{props.required ? '— choose —' : '— none —'}</option>
        {!known && v && <option value={v}>{`${v} (missing)`}</option>}
        {props.options.map((o) => (
          <option key={o.id} value={o.id}>
            {o.label}
          </option>
        ))}
      </select>
      <Help text={props.help} />
    </div>
  );
}

export function Field(props: {
  path: string;
  name: string;
  schema: JsonSchema;
  required: boolean;
  value: unknown;
  onChange: OnChange;
  refs: RefChoices;
}) {
  const { path, name, schema, required, value, onChange, refs } = props;
  const id = useId();
  const label = humanize(name);
  const help = schema.description;
  const testid = tid(path);
  if (refs.modelRefs.has(path))
    return (
      <RefSelect
        {...{ label, value, required, onChange, testid, help }}
        options={refs.models.map((m) => ({ id: m, label: m }))}
      />
    );
  if (refs.serverRefs.has(path))
    return (
      <RefSelect
        {...{ label, value, required, onChange, testid, help }}
        options={refs.servers.map((m) => ({ id: m, label: m }))}
      />
    );
  if (refs.nodeRefs.has(path))
    return <RefSelect {...{ label, value, required, onChange, testid, help }} options={refs.nodes} />;
  if (refs.routeRefs.some((p) => pathMatches(p, path)))
    return (
      <RouteField
        {...{ label, value, required, onChange, testid, help }}
        options={refs.routes()}
        multiple={Array.isArray(schema.anyOf) && schema.anyOf.some((a) => a.type === 'array')}
      />
    );
  if (isConditionSchema(schema))
    return <ConditionField {...{ label, value, required, onChange, testid, help }} />;

  const w = widgetFor(name, schema);
  switch (w.type) {
    case 'enum': {
      const dflt = typeof schema.default === 'string' ? schema.default : undefined;
      return (
        <div className="sb-field">
          <label htmlFor={id}>{label}</label>
          <select
            id={id}
            data-testid={testid}
            value={typeof value === 'string' ? value : ''}
            onChange={(e) => onChange(e.target.value === '' ? undefined : e.target.value, false)}
          >
            {(!required || value === undefined) && (
              <option value="">{dflt ? `— default (${dflt}) —` : '— none —'}</option>
            )}
            {w.options.map((o) => (
              <option key={o} value={o}>
                {o}
              </option>
            ))}
          </select>
          <Help text={help} />
        </div>
      );
    }
    case 'text': {
      const v = typeof value === 'string' ? value : '';
      const set = (s: string, typing: boolean) => onChange(s === '' && !required ? undefined : s, typing);
      if (w.template)
        return <TemplateEditor label={label} value={v} onChange={set} testid={testid} help={help} />;
      return (
        <div className="sb-field">
          <label htmlFor={id}>{label}</label>
          <SharedTextInput id={id} value={v} multiline={w.multiline} testid={testid} onChange={set} />
          <Help text={help} />
        </div>
      );
    }
    case 'number':
      return (
        <div className="sb-field">
          <label htmlFor={id}>{label}</label>
          <input
            id={id}
            type="number"
            data-testid={testid}
            step={w.integer ? 1 : 'any'}
            min={w.min}
            max={w.max}
            value={typeof value === 'number' ? value : ''}
            onChange={(e) => {
              const t = e.target.value;
              if (t === '') onChange(required ? (w.min ?? 0) : undefined, true);
              else if (Number.isFinite(Number(t)))
                onChange(w.integer ? Math.trunc(Number(t)) : Number(t), true);
            }}
          />
          <Help text={help} />
        </div>
      );
    case 'boolean':
      return (
        <div className="sb-field sb-field-check">
          <input
            id={id}
            type="checkbox"
            data-testid={testid}
            checked={value === true}
            onChange={(e) => onChange(e.target.checked ? true : required ? false : undefined, false)}
          />
          <label htmlFor={id}>{label}</label>
          <Help text={help} />
        </div>
      );
    case 'stringList':
      return (
        <StringListEditor
          label={label}
          value={Array.isArray(value) ? (value as string[]) : undefined}
          onChange={(v, typing) => onChange(v === undefined && required ? [] : v, typing)}
          help={help}
          testid={testid}
        />
      );
    case 'objectList': {
      const list = Array.isArray(value) ? (value as unknown[]) : [];
      const setItem = (i: number, v: unknown, typing: boolean) =>
        onChange(
          list.map((x, j) => (j === i ? v : x)),
          typing,
        );
      return (
        <fieldset className="sb-fieldset" data-testid={testid}>
          <legend>{label}</legend>
          <Help text={help} />
          {list.map((item, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: list items have no identity but their place
            <div className="sb-list-item" key={i}>
              <ObjectFields
                path={`${path}.${i}`}
                schema={w.item}
                value={(item ?? {}) as Record<string, unknown>}
                onChange={(v, typing) => setItem(i, v, typing)}
                refs={refs}
              />
              <div className="sb-list-actions">
                <button
                  type="button"
                  disabled={i === 0}
                  onClick={() => onChange(swap(list, i, i - 1), false)}
                  aria-label={`Move ${label} ${i + 1} up`}
                >
                  ↑
                </button>
                <button
                  type="button"
                  onClick={() =>
                    onChange(
                      list.filter((_, j) => j !== i),
                      false,
                    )
                  }
                  aria-label={`Remove ${label} ${i + 1}`}
                >
                  Remove
                </button>
              </div>
            </div>
          ))}
          <button
            type="button"
            data-testid={`${testid}-add`}
            onClick={() => onChange([...list, initialValue(w.item)], false)}
          >
            Add {label.toLowerCase().replace(/s$/, '')}
          </button>
        </fieldset>
      );
    }
    case 'object':
      return (
        <fieldset className="sb-fieldset" data-testid={testid}>
          <legend>{label}</legend>
          <Help text={help} />
          <ObjectFields
            path={path}
            schema={w.schema}
            value={(value ?? {}) as Record<string, unknown>}
            onChange={(v, typing) =>
              onChange(Object.keys(v).length === 0 && !required ? undefined : v, typing)
            }
            refs={refs}
          />
        </fieldset>
      );
    case 'variant': {
      const cur = (value ?? undefined) as Record<string, unknown> | undefined;
      const tag = typeof cur?.[w.discriminator] === 'string' ? (cur[w.discriminator] as string) : '';
      const variant = w.variants.find((v) => v.tag === tag);
      return (
        <fieldset className="sb-fieldset" data-testid={testid}>
          <legend>{label}</legend>
          <Help text={help} />
          <div className="sb-field">
            <label htmlFor={id}>{humanize(w.discriminator)}</label>
            <select
              id={id}
              data-testid={`${testid}-${w.discriminator}`}
              value={tag}
              onChange={(e) => {
                const next = w.variants.find((v) => v.tag === e.target.value);
                onChange(next ? initialValue(next.schema) : undefined, false);
              }}
            >
              {!required && <option value="">— default —</option>}
              {w.variants.map((v) => (
                <option key={v.tag} value={v.tag}>
                  {v.tag}
                </option>
              ))}
            </select>
          </div>
          {variant && cur && (
            <ObjectFields
              path={path}
              schema={variant.schema}
              skip={w.discriminator}
              value={cur}
              onChange={(v, typing) => onChange(v, typing)}
              refs={refs}
            />
          )}
        </fieldset>
      );
    }
    case 'json':
      return (
        <JsonEditor
          label={label}
          value={value}
          jsonSchema={w.jsonSchema}
          allowEmpty={!required}
          onChange={(v) => onChange(v, true)}
          testid={testid}
          help={help}
        />
      );
  }
}

function swap<T>(list: T[], a: number, b: number): T[] {
  const out = [...list];
  [out[a], out[b]] = [out[b]!, out[a]!];
  return out;
}

/** The fields of an object schema; `onChange` receives the whole new object. */
export function ObjectFields(props: {
  path: string;
  schema: JsonSchema;
  value: Record<string, unknown>;
  onChange(v: Record<string, unknown>, typing: boolean): void;
  refs: RefChoices;
  skip?: string;
}) {
  return (
    <>
      {fieldsOf(props.schema)
        .filter((f) => f.key !== props.skip)
        .map((f) => (
          <Field
            key={f.key}
            path={props.path ? `${props.path}.${f.key}` : f.key}
            name={f.key}
            schema={f.schema}
            required={f.required}
            value={props.value[f.key]}
            refs={props.refs}
            onChange={(v, typing) => props.onChange(clean({ ...props.value, [f.key]: v }), typing)}
          />
        ))}
    </>
  );
}

/** The top level of a config: each field is written on its own (one Yjs key per field). */
export function SchemaForm(props: {
  schema: JsonSchema;
  value: Record<string, unknown>;
  onKeyChange(key: string, v: unknown, typing: boolean): void;
  refs: RefChoices;
}) {
  return (
    <>
      {fieldsOf(props.schema).map((f) => (
        <Field
          key={f.key}
          path={f.key}
          name={f.key}
          schema={f.schema}
          required={f.required}
          value={props.value[f.key]}
          refs={props.refs}
          onChange={(v, typing) => props.onKeyChange(f.key, v, typing)}
        />
      ))}
    </>
  );
}
