/**
 * The answer form for an MCP server's elicitation (a tool asking the person running the flow):
 * one input per field of the server's form, filled with its defaults, and Accept, Decline or
 * Cancel. Accept sends the content as JSON through the run's `answer` command.
 */
import { useId, useState } from 'react';
import {
  acceptAnswer,
  type FormField,
  type FormValue,
  formFields,
  initialValues,
} from '../run/elicitForm.js';
import type { WaitingInput } from '../run/transcript.js';

const INPUT_TYPE: Readonly<Record<string, string>> = {
  email: 'email',
  uri: 'url',
  date: 'date',
  'date-time': 'datetime-local',
};

function FieldInput(props: { f: FormField; value: FormValue; set(v: FormValue): void; problem?: string }) {
  const { f, value, set } = props;
  const id = useId();
  const tid = `elicit-${f.key}`;
  const label = (
    <label htmlFor={id}>
      {f.title}
      {f.required && <abbr title="required"> *</abbr>}
    </label>
  );
  let input: React.ReactNode;
  switch (f.kind) {
    case 'boolean':
      return (
        <div className="sb-field sb-field-check">
          <input
            id={id}
            type="checkbox"
            data-testid={tid}
            checked={value === true}
            onChange={(e) => set(e.target.checked)}
          />
          {label}
          {f.description && <div className="sb-help">{f.description}</div>}
        </div>
      );
    case 'choice':
      input = (
        <select
          id={id}
          data-testid={tid}
          value={typeof value === 'string' ? value : ''}
          onChange={(e) => set(e.target.value || undefined)}
        >
          <option value="">— choose —</option>
          {f.options?.map((o) => (
            <option key={o.value} value={o.value}>
              {o.label}
            </option>
          ))}
        </select>
      );
      break;
    case 'choices': {
      const list = Array.isArray(value) ? value : [];
      input = (
        <div id={id} data-testid={tid}>
          {f.options?.map((o) => (
            <label key={o.value} className="sb-elicit-choice">
              <input
                type="checkbox"
                data-testid={`${tid}-${o.value}`}
                checked={list.includes(o.value)}
                onChange={(e) =>
                  set(e.target.checked ? [...list, o.value] : list.filter((x) => x !== o.value))
                }
              />
              {o.label}
            </label>
          ))}
        </div>
      );
      break;
    }
    case 'number':
    case 'integer':
      input = (
        <input
          id={id}
          type="number"
          data-testid={tid}
          step={f.kind === 'integer' ? 1 : 'any'}
          min={f.min}
          max={f.max}
          value={typeof value === 'number' ? value : ''}
          onChange={(e) => set(e.target.value === '' ? undefined : Number(e.target.value))}
        />
      );
      break;
    default:
      input = (
        <input
          id={id}
          type={INPUT_TYPE[f.format ?? ''] ?? 'text'}
          data-testid={tid}
          minLength={f.minLength}
          maxLength={f.maxLength}
          value={typeof value === 'string' ? value : ''}
          onChange={(e) => set(e.target.value)}
        />
      );
  }
  return (
    <div className="sb-field">
      {label}
      {input}
      {f.description && <div className="sb-help">{f.description}</div>}
      {props.problem && (
        <div className="sb-field-error" role="alert" data-testid={`${tid}-problem`}>
          {f.title}: {props.problem}
        </div>
      )}
    </div>
  );
}

export function ElicitationForm(props: {
  waiting: WaitingInput & { form: Record<string, unknown> };
  who: string;
  busy: boolean;
  answer(text: string): void;
}) {
  const read = formFields(props.waiting.form);
  const fields = 'fields' in read ? read.fields : [];
  const [values, setValues] = useState(() => initialValues(fields));
  const [problems, setProblems] = useState(new Map<string, string>());
  const set = (key: string) => (v: FormValue) => setValues((m) => new Map(m).set(key, v));
  return (
    <form
      className="sb-answer sb-elicit"
      data-testid="elicit-form"
      data-node={props.waiting.nodeId}
      onSubmit={(ev) => {
        ev.preventDefault();
        const a = acceptAnswer(fields, values);
        if ('problems' in a) setProblems(a.problems);
        else props.answer(a.text);
      }}
    >
      <strong>A tool of {props.who} asks:</strong>
      <p className="sb-answer-question" data-testid="answer-question">
        {props.waiting.question}
      </p>
      {'error' in read ? (
        <p className="sb-field-error" data-testid="elicit-unreadable">
          This form cannot be shown ({read.error}); it can only be declined.
        </p>
      ) : (
        fields.map((f) => (
          <FieldInput
            key={f.key}
            f={f}
            value={values.get(f.key)}
            set={set(f.key)}
            problem={problems.get(f.key)}
          />
        ))
      )}
      <div className="sb-row">
        {'fields' in read && (
          <button type="submit" data-testid="elicit-accept" disabled={props.busy}>
            Accept
          </button>
        )}
        <button
          type="button"
          data-testid="elicit-decline"
          disabled={props.busy}
          onClick={() => props.answer('decline')}
        >
          Decline
        </button>
        <button
          type="button"
          data-testid="elicit-cancel"
          disabled={props.busy}
          onClick={() => props.answer('cancel')}
        >
          Cancel
        </button>
      </div>
    </form>
  );
}
