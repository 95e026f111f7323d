/**
 * A condition edited as rows and groups instead of JSON: each comparison is a field (a path the
 * condition context knows), an operator and a typed value; groups hold "all" or "any" of their
 * rows and can be negated. The raw JSON is one toggle away. The builder only writes what a person
 * changed, copying each object with its keys in order, so opening and saving changes nothing.
 */
import type { ConditionT } from '@switchboard/schemas/core';
import { useState } from 'react';
import {
  CONDITION_PATHS,
  type CompareOp,
  convertValue,
  newComparison,
  OP_LABELS,
  OPS,
  parseValue,
  TEXT_OPS,
  UNARY_OPS,
  unbuildable,
  type ValueKind,
  valueKind,
  valueText,
  withKey,
  withOp,
} from '../model/conditionBuilder.js';
import { Help, JsonEditor, useDraftText } from './fields.js';
import './ConditionBuilder.css';

type Cond = Record<string, unknown>;
type OnChange = (v: unknown, typing: boolean) => void;

const PATHS_LIST = 'sb-condition-paths';

/** The datalist of known paths, rendered once per builder. */
function PathSuggestions() {
  return (
    <datalist id={PATHS_LIST}>
      {CONDITION_PATHS.map((p) => (
        <option key={p.path} value={p.path}>
          {p.hint}
        </option>
      ))}
    </datalist>
  );
}

/** A value input that keeps what is typed until it parses, then writes the typed value. */
function ValueInput(props: { kind: ValueKind; value: unknown; onChange(v: unknown): void; testid: string }) {
  const { text, setText, error, setError, wrote } = useDraftText(valueText(props.kind, props.value));
  if (props.kind === 'boolean')
    return (
      <select
        aria-label="Value"
        data-testid={props.testid}
        value={props.value === true ? 'true' : 'false'}
        onChange={(e) => props.onChange(e.target.value === 'true')}
      >
        <option value="true">true</option>
        <option value="false">false</option>
      </select>
    );
  return (
    <span className="sb-cond-value">
      <input
        aria-label="Value"
        data-testid={props.testid}
        type={props.kind === 'number' ? 'number' : 'text'}
        step="any"
        value={text}
        aria-invalid={!!error}
        spellCheck={false}
        onChange={(e) => {
          const t = e.target.value;
          setText(t);
          const parsed = parseValue(props.kind, t);
          if ('error' in parsed) {
            setError(parsed.error);
            return;
          }
          setError('');
          wrote(valueText(props.kind, parsed.value));
          props.onChange(parsed.value);
        }}
      />
      {error && (
        <span className="sb-field-error" role="alert">
          {error}
        </span>
      )}
    </span>
  );
}

function Comparison(props: { c: Cond; onChange: OnChange; tid: string; tools: React.ReactNode }) {
  const { c, onChange, tid } = props;
  const op = c.op as CompareOp;
  const kind = valueKind(c.value);
  return (
    <div className="sb-cond-row" data-testid={tid}>
      <input
        aria-label="Field"
        className="sb-cond-path"
        data-testid={`${tid}-path`}
        list={PATHS_LIST}
        value={String(c.path)}
        spellCheck={false}
        onChange={(e) => onChange(withKey(c, 'path', e.target.value), true)}
      />
      <select
        aria-label="Operator"
        data-testid={`${tid}-op`}
        value={op}
        onChange={(e) => onChange(withOp(c, e.target.value as CompareOp), false)}
      >
        {OPS.map((o) => (
          <option key={o} value={o}>
            {OP_LABELS[o]}
          </option>
        ))}
      </select>
      {!UNARY_OPS.has(op) && (
        <>
          <select
            aria-label="Value type"
            data-testid={`${tid}-kind`}
            value={kind}
            onChange={(e) =>
              onChange(withKey(c, 'value', convertValue(c.value, e.target.value as ValueKind)), false)
            }
          >
            <option value="text">text</option>
            <option value="number">number</option>
            <option value="boolean">true/false</option>
            <option value="json">JSON</option>
          </select>
          <ValueInput
            kind={kind}
            value={c.value}
            testid={`${tid}-value`}
            onChange={(v) => onChange(withKey(c, 'value', v), kind !== 'boolean')}
          />
        </>
      )}
      {TEXT_OPS.has(op) && (
        <label className="sb-cond-ic">
          <input
            type="checkbox"
            data-testid={`${tid}-ic`}
            checked={c.ignoreCase === true}
            onChange={(e) => onChange(withKey(c, 'ignoreCase', e.target.checked ? true : undefined), false)}
          />
          ignore case
        </label>
      )}
      {props.tools}
    </div>
  );
}

/** The buttons every row and group has: negate and remove. */
function RowTools(props: { negated: boolean; onNegate(): void; onRemove?: () => void; tid: string }) {
  return (
    <span className="sb-cond-tools">
      <button
        type="button"
        data-testid={`${props.tid}-negate`}
        aria-pressed={props.negated}
        title={props.negated ? 'Remove the negation' : 'Negate: holds when this does not'}
        onClick={props.onNegate}
      >
        not
      </button>
      {props.onRemove && (
        <button
          type="button"
          data-testid={`${props.tid}-remove`}
          aria-label="Remove"
          onClick={props.onRemove}
        >
          ×
        </button>
      )}
    </span>
  );
}

/** One node of the condition tree, and its children. */
function CondNode(props: { c: Cond; onChange: OnChange; onRemove?: () => void; tid: string; depth: number }) {
  const { c, onChange, onRemove, tid, depth } = props;
  const negate = () => onChange({ not: c }, false);
  if ('not' in c) {
    const inner = c.not as Cond;
    // A negated row shows as the row with its "not" pressed; un-negating unwraps it.
    return (
      <div className="sb-cond-not">
        <CondInner
          c={inner}
          negated
          onNegate={() => onChange(inner, false)}
          onChange={(v, typing) => onChange(withKey(c, 'not', v), typing)}
          onRemove={onRemove}
          tid={`${tid}-n`}
          depth={depth + 1}
        />
      </div>
    );
  }
  return (
    <CondInner
      c={c}
      negated={false}
      onNegate={negate}
      onChange={onChange}
      onRemove={onRemove}
      tid={tid}
      depth={depth}
    />
  );
}

function CondInner(props: {
  c: Cond;
  negated: boolean;
  onNegate(): void;
  onChange: OnChange;
  onRemove?: () => void;
  tid: string;
  depth: number;
}) {
  const { c, onChange, tid, depth } = props;
  const tools = (
    <RowTools negated={props.negated} onNegate={props.onNegate} onRemove={props.onRemove} tid={tid} />
  );
  if ('always' in c)
    return (
      <div className="sb-cond-row" data-testid={tid}>
        <span className="sb-cond-always">always</span>
        <button type="button" data-testid={`${tid}-replace`} onClick={() => onChange(newComparison(), false)}>
          Replace with a condition
        </button>
        {tools}
      </div>
    );
  if ('all' in c || 'any' in c) {
    const key = 'all' in c ? 'all' : 'any';
    const list = c[key] as Cond[];
    const setList = (next: unknown[], typing: boolean) => onChange(withKey(c, key, next), typing);
    return (
      <div className={`sb-cond-group${depth % 2 ? ' sb-cond-group-odd' : ''}`} data-testid={tid}>
        <div className="sb-cond-group-head">
          <select
            aria-label="Group"
            data-testid={`${tid}-join`}
            value={key}
            onChange={(e) => onChange(e.target.value === 'any' ? { any: list } : { all: list }, false)}
          >
            <option value="all">All of these hold</option>
            <option value="any">Any of these holds</option>
          </select>
          {tools}
        </div>
        {list.length === 0 && (
          <p className="sb-help">
            {key === 'all' ? 'An empty "all" always holds.' : 'An empty "any" never holds.'}
          </p>
        )}
        {list.map((child, i) => (
          <CondNode
            // biome-ignore lint/suspicious/noArrayIndexKey: rows have no identity but their place
            key={i}
            c={child}
            tid={`${tid}-${i}`}
            depth={depth + 1}
            onChange={(v, typing) =>
              setList(
                list.map((x, j) => (j === i ? v : x)),
                typing,
              )
            }
            onRemove={() =>
              setList(
                list.filter((_, j) => j !== i),
                false,
              )
            }
          />
        ))}
        <div className="sb-cond-add">
          <button
            type="button"
            data-testid={`${tid}-add`}
            onClick={() => setList([...list, newComparison()], false)}
          >
            + Condition
          </button>
          <button
            type="button"
            data-testid={`${tid}-addgroup`}
            onClick={() => setList([...list, { any: [newComparison()] }], false)}
          >
            + Group
          </button>
        </div>
      </div>
    );
  }
  return <Comparison c={c} onChange={onChange} tid={tid} tools={tools} />;
}

/** A config field holding a condition: the builder, or its JSON. */
export function ConditionField(props: {
  label: string;
  value: unknown;
  required: boolean;
  onChange: OnChange;
  testid: string;
  help?: string;
}) {
  const { value, required, onChange, testid } = props;
  const [json, setJson] = useState(false);
  const why = value === undefined ? undefined : unbuildable(value);
  const raw = json || why !== undefined;
  const root = value as Cond;
  const isGroup = value !== undefined && ('all' in root || 'any' in root);
  return (
    <fieldset className="sb-fieldset sb-cond" data-testid={testid}>
      <legend>{props.label}</legend>
      <div className="sb-cond-mode">
        <button
          type="button"
          data-testid={`${testid}-builder`}
          aria-pressed={!raw}
          disabled={why !== undefined}
          onClick={() => setJson(false)}
        >
          Builder
        </button>
        <button
          type="button"
          data-testid={`${testid}-json-toggle`}
          aria-pressed={raw}
          onClick={() => setJson(true)}
        >
          JSON
        </button>
      </div>
      {why !== undefined && <p className="sb-help">Shown as JSON: the builder cannot show it ({why}).</p>}
      {raw ? (
        <JsonEditor
          label={`${props.label} (JSON)`}
          value={value}
          allowEmpty={!required}
          onChange={(v) => onChange(v, true)}
          testid={`${testid}-json`}
        />
      ) : value === undefined ? (
        <div className="sb-cond-row">
          <span className="sb-cond-always">always (no condition)</span>
          <button
            type="button"
            data-testid={`${testid}-b-add`}
            onClick={() => onChange(newComparison(), false)}
          >
            + Condition
          </button>
        </div>
      ) : (
        <>
          <PathSuggestions />
          <CondNode
            c={root}
            tid={`${testid}-b`}
            depth={0}
            onChange={onChange}
            onRemove={required ? undefined : () => onChange(undefined, false)}
          />
          {!isGroup && (
            <div className="sb-cond-add">
              <button
                type="button"
                data-testid={`${testid}-b-and`}
                onClick={() => onChange({ all: [value as ConditionT, newComparison()] }, false)}
              >
                + And
              </button>
              <button
                type="button"
                data-testid={`${testid}-b-or`}
                onClick={() => onChange({ any: [value as ConditionT, newComparison()] }, false)}
              >
                + Or
              </button>
            </div>
          )}
        </>
      )}
      <Help text={props.help} />
    </fieldset>
  );
}
