/**
 * A route field (a decider rule's `to`, its `default`, an agent's `noHandover.default`): picked
 * from the edges the node can actually take, plus "done", instead of typed as a JSON-quoted id.
 * A value that names no such edge (a removed edge, a target node id) stays shown and marked, so
 * the picker never drops what the flow says.
 */
import { useId } from 'react';
import type { RouteChoice } from '../model/routes.js';
import { Help } from './fields.js';

const DONE: RouteChoice = { id: 'done', label: 'done (end the team or run)' };

export function RouteField(props: {
  label: string;
  value: unknown;
  options: RouteChoice[];
  multiple: boolean;
  required: boolean;
  onChange(v: unknown, typing: boolean): void;
  testid: string;
  help?: string;
}) {
  const id = useId();
  const { value, options, required, onChange, testid } = props;
  const all = [...options, DONE];
  const chosen = Array.isArray(value)
    ? value.filter((v): v is string => typeof v === 'string')
    : typeof value === 'string' && value !== ''
      ? [value]
      : [];
  const unknown = chosen.filter((v) => !all.some((o) => o.id === v));
  const shown = [...all, ...unknown.map((v) => ({ id: v, label: `${v} (not an edge this node can take)` }))];

  if (!props.multiple)
    return (
      <div className="sb-field">
        <label htmlFor={id}>{props.label}</label>
        <select
          id={id}
          data-testid={testid}
          value={chosen[0] ?? ''}
          onChange={(e) => onChange(e.target.value === '' && !required ? undefined : e.target.value, false)}
        >
          <option value="">{required ? '— choose an edge —' : '— none —'}</option>
          {shown.map((o) => (
            <option key={o.id} value={o.id}>
              {o.label}
            </option>
          ))}
        </select>
        <Help text={props.help} />
      </div>
    );

  // One target keeps the shape it had (a string, or a list of one); several are a list.
  const write = (next: string[]) => {
    if (next.length === 0) onChange(required ? '' : undefined, false);
    else if (next.length === 1 && !Array.isArray(value)) onChange(next[0], false);
    else onChange(next, false);
  };
  return (
    <fieldset className="sb-fieldset sb-routes" data-testid={testid}>
      <legend>{props.label}</legend>
      {shown.map((o) => (
        <label key={o.id} className={`sb-route${unknown.includes(o.id) ? ' sb-route-unknown' : ''}`}>
          <input
            type="checkbox"
            data-testid={`${testid}-${o.id}`}
            checked={chosen.includes(o.id)}
            onChange={(e) => write(e.target.checked ? [...chosen, o.id] : chosen.filter((c) => c !== o.id))}
          />
          {o.label}
        </label>
      ))}
      {chosen.length > 1 && <p className="sb-help">Several edges run in parallel.</p>}
      <Help text={props.help} />
    </fieldset>
  );
}
