/** Small form widgets: a text area for templates, a JSON editor, a list-of-strings editor. */
import { useEffect, useId, useRef, useState } from 'react';
import { jsonSchemaProblem } from '../model/schemaForm.js';
import { checkTemplate, TEMPLATE_VARS } from '../model/templateVars.js';

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
  const ref = useRef<HTMLTextAreaElement>(null);
  const check = checkTemplate(props.value);
  const insert = (name: string) => {
    const el = ref.current;
    const token = name.endsWith('.') ? `{{${name}key}}` : `{{${name}}}`;
    const start = el?.selectionStart ?? props.value.length;
    const end = el?.selectionEnd ?? props.value.length;
    props.onChange(props.value.slice(0, start) + token + props.value.slice(end), false);
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
        onChange={(e) => props.onChange(e.target.value, true)}
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
  const [text, setText] = useState(external);
  const [error, setError] = useState('');
  const last = useRef(external);
  useEffect(() => {
    // Follow the document (undo, another editor) unless this text is what we wrote.
    if (external !== last.current) {
      last.current = external;
      setText(external);
      setError('');
    }
  }, [external]);
  const edit = (t: string) => {
    setText(t);
    if (t.trim() === '' && props.allowEmpty) {
      setError('');
      last.current = '';
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
    last.current = JSON.stringify(v, null, 2);
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
  const external = (props.value ?? []).join('\n');
  const [text, setText] = useState(external);
  const last = useRef(external);
  useEffect(() => {
    if (external !== last.current) {
      last.current = external;
      setText(external);
    }
  }, [external]);
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
          last.current = list.join('\n');
          props.onChange(list.length ? list : undefined, true);
        }}
      />
      <Help text={props.help} />
    </div>
  );
}
