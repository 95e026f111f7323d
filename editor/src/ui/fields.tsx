/** Small form widgets: a text area for templates, a JSON editor, a list-of-strings editor. */
import { setTextEditHint, textDiff } from '@switchboard/schemas/ydoc';
import { type ChangeEvent, useEffect, useId, useLayoutEffect, useRef, useState } from 'react';
import { caretThroughRemote } from '../collab/textCarets.js';
import { jsonSchemaProblem } from '../model/schemaForm.js';
import { checkTemplate, TEMPLATE_VARS } from '../model/templateVars.js';

type TextElement = HTMLInputElement | HTMLTextAreaElement;

/** Where a caret ends up when the text around it changed by `d` (a co-editor's edit). */
export function mapCaret(c: number, d: { at: number; del: number; ins: string }): number {
  if (c <= d.at) return c;
  if (c >= d.at + d.del) return c - d.del + d.ins.length;
  return d.at + d.ins.length;
}

/**
 * Binds a text input to a shared text: the person's own edit is sent with where their caret
 * ended up (so the document gets the insert where it was typed, see `setTextEditHint`), and a
 * co-editor's edit arriving while they type moves their caret and selection along with the
 * text instead of throwing it to the end.
 */
export function useSharedText<T extends TextElement>(value: string) {
  const ref = useRef<T>(null);
  const before = useRef<{ value: string; start: number; end: number } | undefined>(undefined);
  // Read while rendering: the element still shows the previous text and its selection.
  const el = ref.current;
  if (el && el.value !== value && document.activeElement === el)
    before.current = { value: el.value, start: el.selectionStart ?? 0, end: el.selectionEnd ?? 0 };
  useLayoutEffect(() => {
    const b = before.current;
    before.current = undefined;
    const node = ref.current;
    if (!b || !node || document.activeElement !== node || node.value !== value) return;
    // Exactly where the co-editor's change went, when it is known; else the strings' diff.
    const d = textDiff(b.value, value);
    const start = caretThroughRemote(b.value, value, b.start) ?? mapCaret(b.start, d);
    const end = caretThroughRemote(b.value, value, b.end) ?? mapCaret(b.end, d);
    node.setSelectionRange(start, end);
  }, [value]);
  /** The value of an input event, with the caret recorded for the diff. */
  const read = (e: ChangeEvent<T>): string => {
    const v = e.target.value;
    setTextEditHint(v, e.target.selectionEnd ?? v.length);
    return v;
  };
  return { ref, read };
}

export function Help({ text }: { text?: string }) {
  return text ? <div className="sb-help">{text}</div> : null;
}

/**
 * A prompt editor that knows the template variables: buttons insert them at the cursor, and a
 * line under the text names any variable the runtime would not fill in.
 */
export function TemplateEditor(props: {
  label: string;
  value: string;
  onChange(v: string, typing: boolean): void;
  testid?: string;
  help?: string;
}) {
  const id = useId();
  const { ref, read } = useSharedText<HTMLTextAreaElement>(props.value);
  const check = checkTemplate(props.value);
  const insert = (name: string) => {
    const el = ref.current;
    const token = name.endsWith('.') ? `{{${name}key}}` : `{{${name}}}`;
    const start = el?.selectionStart ?? props.value.length;
    const end = el?.selectionEnd ?? props.value.length;
    const next = props.value.slice(0, start) + token + props.value.slice(end);
    setTextEditHint(next, start + token.length);
    props.onChange(next, false);
    requestAnimationFrame(() => {
      el?.focus();
      el?.setSelectionRange(start + token.length, start + token.length);
    });
  };
  return (
    <div className="sb-field">
      <label htmlFor={id}>{props.label}</label>
      <textarea
        id={id}
        ref={ref}
        rows={4}
        value={props.value}
        data-testid={props.testid}
        spellCheck={false}
        onChange={(e) => props.onChange(read(e), true)}
      />
      <fieldset className="sb-template-vars">
        <legend className="sb-sr-only">{`Insert a variable into ${props.label}`}</legend>
        {TEMPLATE_VARS.map((v) => (
          <button type="button" key={v.name} title={v.help} onClick={() => insert(v.name)}>
            {`{{${v.name}${v.name.endsWith('.') ? '…' : ''}}}`}
          </button>
        ))}
      </fieldset>
      {(check.unknown.length > 0 || check.unclosed) && (
        <div className="sb-field-error" role="alert">
          {check.unclosed ? 'A {{ is not closed. ' : ''}
          {check.unknown.length > 0
            ? `Unknown variable${check.unknown.length > 1 ? 's' : ''}: ${check.unknown.join(', ')}`
            : ''}
        </div>
      )}
      <Help text={props.help} />
    </div>
  );
}

/**
 * Edits a JSON value as text. The value is written only when the text parses (and, for JSON
 * Schema fields, looks like a schema); otherwise the error is shown and the document is untouched.
 */
/**
 * The text of a field whose typed value may not parse yet (JSON, a number, a list): it follows
 * the document (undo, another editor) unless the document holds what this field last wrote.
 */
export function useDraftText(external: string) {
  const [text, setText] = useState(external);
  const [error, setError] = useState('');
  const last = useRef(external);
  useEffect(() => {
    if (external !== last.current) {
      last.current = external;
      setText(external);
      setError('');
    }
  }, [external]);
  const wrote = (t: string) => {
    last.current = t;
  };
  return { text, setText, error, setError, wrote };
}

export function JsonEditor(props: {
  label: string;
  value: unknown;
  onChange(v: unknown): void;
  jsonSchema?: boolean;
  testid?: string;
  help?: string;
  allowEmpty?: boolean;
}) {
  const id = useId();
  const external = props.value === undefined ? '' : JSON.stringify(props.value, null, 2);
  const { text, setText, error, setError, wrote } = useDraftText(external);
  const edit = (t: string) => {
    setText(t);
    if (t.trim() === '' && props.allowEmpty) {
      setError('');
      wrote('');
      props.onChange(undefined);
      return;
    }
    let v: unknown;
    try {
      v = JSON.parse(t);
    } catch (e) {
      setError(`Invalid JSON: ${(e as Error).message}`);
      return;
    }
    const bad = props.jsonSchema ? jsonSchemaProblem(v) : undefined;
    if (bad) {
      setError(`Not a JSON Schema: ${bad}`);
      return;
    }
    setError('');
    wrote(JSON.stringify(v, null, 2));
    props.onChange(v);
  };
  return (
    <div className="sb-field">
      <label htmlFor={id}>{props.label}</label>
      <textarea
        id={id}
        className="sb-json"
        rows={Math.min(12, Math.max(3, text.split('\n').length))}
        value={text}
        spellCheck={false}
        data-testid={props.testid}
        aria-invalid={!!error}
        onChange={(e) => edit(e.target.value)}
      />
      {error ? (
        <div
          className="sb-field-error"
          role="alert"
          data-testid={props.testid ? `${props.testid}-error` : undefined}
        >
          {error}
        </div>
      ) : (
        props.jsonSchema && <div className="sb-help">Valid JSON Schema.</div>
      )}
      <Help text={props.help} />
    </div>
  );
}

/** One string per line. */
export function StringListEditor(props: {
  label: string;
  value: string[] | undefined;
  onChange(v: string[] | undefined, typing: boolean): void;
  help?: string;
  testid?: string;
}) {
  const id = useId();
  const { text, setText, wrote } = useDraftText((props.value ?? []).join('\n'));
  return (
    <div className="sb-field">
      <label htmlFor={id}>{props.label}</label>
      <textarea
        id={id}
        rows={3}
        value={text}
        data-testid={props.testid}
        placeholder="one per line"
        onChange={(e) => {
          setText(e.target.value);
          const list = e.target.value.split('\n').filter((s) => s.trim() !== '');
          wrote(list.join('\n'));
          props.onChange(list.length ? list : undefined, true);
        }}
      />
      <Help text={props.help} />
    </div>
  );
}

/** A one-line or multi-line input bound to a shared text (see `useSharedText`). */
export function SharedTextInput(props: {
  id: string;
  value: string;
  multiline: boolean;
  testid?: string;
  onChange(v: string, typing: boolean): void;
}) {
  const area = useSharedText<HTMLTextAreaElement>(props.value);
  const line = useSharedText<HTMLInputElement>(props.value);
  return props.multiline ? (
    <textarea
      id={props.id}
      ref={area.ref}
      rows={3}
      value={props.value}
      data-testid={props.testid}
      onChange={(e) => props.onChange(area.read(e), true)}
    />
  ) : (
    <input
      id={props.id}
      ref={line.ref}
      value={props.value}
      data-testid={props.testid}
      onChange={(e) => props.onChange(line.read(e), true)}
    />
  );
}
