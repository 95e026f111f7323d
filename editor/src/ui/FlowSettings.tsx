/**
 * Flow settings: name, description, models, MCP servers and budgets. A secret can only be an
 * `${env:NAME}` reference: anything else typed into a secret field is refused and never stored.
 */
import { Budgets, type McpServerConfigT, type ModelConfigT, setOwn } from '@switchboard/schemas/core';
import { useId, useState } from 'react';
import type { JsonSchema } from '../model/schemaForm.js';
import { useDocVersion, useEditor } from './context.js';
import { Help, JsonEditor, useSharedText } from './fields.js';
import { McpConnect } from './McpConnect.js';
import { type RefChoices, SchemaForm } from './SchemaForm.js';

const ENV_REF = /^\$\{env:[A-Za-z_][A-Za-z0-9_]*\}$/;
const ENTRY_NAME = /^[A-Za-z0-9_.-]+$/;
const NO_REFS: RefChoices = {
  models: [],
  servers: [],
  nodes: [],
  modelRefs: new Set(),
  serverRefs: new Set(),
  nodeRefs: new Set(),
  routes: () => [],
  routeRefs: [],
};

function TextField(props: {
  label: string;
  value: string;
  onChange(v: string): void;
  testid?: string;
  multiline?: boolean;
  placeholder?: string;
  help?: string;
}) {
  const id = useId();
  // Bound like the inspector's texts: the description is a shared text (carets kept).
  const area = useSharedText<HTMLTextAreaElement>(props.value);
  const line = useSharedText<HTMLInputElement>(props.value);
  return (
    <div className="sb-field">
      <label htmlFor={id}>{props.label}</label>
      {props.multiline ? (
        <textarea
          id={id}
          ref={area.ref}
          rows={2}
          value={props.value}
          data-testid={props.testid}
          onChange={(e) => props.onChange(area.read(e))}
        />
      ) : (
        <input
          id={id}
          ref={line.ref}
          value={props.value}
          data-testid={props.testid}
          placeholder={props.placeholder}
          onChange={(e) => props.onChange(line.read(e))}
        />
      )}
      <Help text={props.help} />
    </div>
  );
}

/** A secret field: accepts only `${env:NAME}`; shows why anything else is refused. */
export function SecretField(props: {
  label: string;
  value: string | undefined;
  onChange(v: string | undefined): void;
  testid: string;
}) {
  const id = useId();
  const [draft, setDraft] = useState<string | undefined>(undefined);
  const shown = draft ?? props.value ?? '';
  const bad = draft !== undefined && draft !== '' && !ENV_REF.test(draft);
  return (
    <div className="sb-field">
      <label htmlFor={id}>{props.label}</label>
      <input
        id={id}
        value={shown}
        data-testid={props.testid}
        placeholder="${env:OPENAI_API_KEY}"
        aria-invalid={bad}
        autoComplete="off"
        onChange={(e) => {
          const v = e.target.value;
          if (v === '' || ENV_REF.test(v)) {
            setDraft(undefined);
            props.onChange(v === '' ? undefined : v);
          } else setDraft(v);
        }}
        onBlur={() => setDraft(undefined)}
      />
      {bad && (
        <div className="sb-field-error" role="alert" data-testid={`${props.testid}-error`}>
          Secrets never go into a flow: write {'${env:NAME}'} and set NAME in the environment that runs it.
        </div>
      )}
    </div>
  );
}

function renameKey<T>(obj: Record<string, T>, from: string, to: string): Record<string, T> {
  // Ordinary objects, keys as own properties: these go into the shared document (Yjs refuses
  // null-prototype values).
  const out: Record<string, T> = {};
  for (const [k, v] of Object.entries(obj)) setOwn(out, k === from ? to : k, v);
  return out;
}

function EntryName(props: {
  value: string;
  taken: string[];
  onRename(v: string): void;
  label: string;
  testid: string;
}) {
  const id = useId();
  const [draft, setDraft] = useState(props.value);
  const problem = !ENTRY_NAME.test(draft)
    ? 'letters, digits, _ . - only'
    : draft !== props.value && props.taken.includes(draft)
      ? 'already used'
      : '';
  return (
    <div className="sb-field">
      <label htmlFor={id}>{props.label}</label>
      <input
        id={id}
        value={draft}
        data-testid={props.testid}
        onChange={(e) => setDraft(e.target.value)}
        onBlur={() => (problem ? setDraft(props.value) : draft !== props.value && props.onRename(draft))}
        onKeyDown={(e) => e.key === 'Enter' && (e.target as HTMLInputElement).blur()}
      />
      {problem && <div className="sb-field-error">{problem}</div>}
    </div>
  );
}

function ModelsEditor() {
  const { store } = useEditor();
  const models = (store.meta('models') ?? {}) as Record<string, ModelConfigT>;
  const names = Object.keys(models);
  const set = (next: Record<string, ModelConfigT>, typing = false) => store.setMeta('models', next, typing);
  const patch = (name: string, p: Partial<ModelConfigT>, typing = false) => {
    const m: Record<string, unknown> = { ...models[name], ...p };
    for (const k of Object.keys(m)) if (m[k] === undefined) Reflect.deleteProperty(m, k);
    set({ ...models, [name]: m as ModelConfigT }, typing);
  };
  return (
    <fieldset className="sb-fieldset" data-testid="models">
      <legend>Models</legend>
      <Help text="Agents, deciders and observers refer to these by name." />
      {names.map((name) => {
        const m = models[name]!;
        return (
          <div className="sb-list-item" key={name} data-testid={`model-${name}`}>
            <EntryName
              label="Name"
              value={name}
              taken={names}
              testid={`model-${name}-name`}
              onRename={(to) => set(renameKey(models, name, to))}
            />
            <ProviderSelect
              value={m.provider}
              onChange={(provider) => patch(name, { provider })}
              testid={`model-${name}-provider`}
            />
            <TextField
              label="Model"
              value={m.model ?? ''}
              testid={`model-${name}-model`}
              onChange={(v) => patch(name, { model: v || undefined }, true)}
            />
            {m.provider === 'openai' && (
              <>
                <TextField
                  label="Base URL"
                  value={m.baseURL ?? ''}
                  placeholder="https://api.openai.com/v1"
                  testid={`model-${name}-baseURL`}
                  onChange={(v) => patch(name, { baseURL: v || undefined }, true)}
                />
                <SecretField
                  label="API key"
                  value={m.apiKey}
                  testid={`model-${name}-apiKey`}
                  onChange={(v) => patch(name, { apiKey: v })}
                />
              </>
            )}
            <details>
              <summary>All settings as JSON</summary>
              <JsonEditor
                label={`Model ${name}`}
                value={m}
                onChange={(v) => v && typeof v === 'object' && set({ ...models, [name]: v as ModelConfigT })}
              />
            </details>
            <button
              type="button"
              onClick={() => set(Object.fromEntries(Object.entries(models).filter(([k]) => k !== name)))}
            >
              Remove model {name}
            </button>
          </div>
        );
      })}
      <button
        type="button"
        data-testid="model-add"
        onClick={() => {
          let i = names.length + 1;
          while (names.includes(`model${i}`)) i++;
          set({
            ...models,
            [`model${i}`]: { provider: 'openai', model: 'gpt-4o-mini', apiKey: '${env:OPENAI_API_KEY}' },
          });
        }}
      >
        Add model
      </button>
    </fieldset>
  );
}

function ProviderSelect(props: { value: string; onChange(v: string): void; testid: string }) {
  const id = useId();
  const known = ['openai', 'scripted'];
  return (
    <div className="sb-field">
      <label htmlFor={id}>Provider</label>
      <select
        id={id}
        value={props.value}
        data-testid={props.testid}
        onChange={(e) => props.onChange(e.target.value)}
      >
        {!known.includes(props.value) && <option value={props.value}>{props.value}</option>}
        <option value="openai">openai (any OpenAI-compatible endpoint)</option>
        <option value="scripted">scripted (deterministic replies, offline)</option>
      </select>
    </div>
  );
}

type ServerType = 'builtin' | 'command' | 'url';
const serverType = (s: McpServerConfigT): ServerType =>
  'builtin' in s ? 'builtin' : 'command' in s ? 'command' : 'url';

/** Values of env and headers must carry secrets as references only. */
function envProblem(v: unknown): string | undefined {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return 'an object of names to values';
  for (const [k, val] of Object.entries(v)) {
    if (typeof val !== 'string') return `"${k}" must be a string`;
    if (/\$\{env:/.test(val) && !/\$\{env:[A-Za-z_][A-Za-z0-9_]*\}/.test(val))
      return `"${k}" has a malformed \${env:…}`;
  }
  return undefined;
}

function ServersEditor() {
  const { store } = useEditor();
  const servers = (store.meta('mcpServers') ?? {}) as Record<string, McpServerConfigT>;
  const names = Object.keys(servers);
  const set = (next: Record<string, McpServerConfigT>, typing = false) =>
    store.setMeta('mcpServers', Object.keys(next).length ? next : undefined, typing);
  const [envError, setEnvError] = useState('');
  return (
    <fieldset className="sb-fieldset" data-testid="servers">
      <legend>MCP servers</legend>
      <Help text="Tool nodes grant these servers to agents. A command runs only after the operator approves it." />
      {names.map((name) => {
        const s = servers[name]!;
        const type = serverType(s);
        const put = (v: McpServerConfigT, typing = false) => set({ ...servers, [name]: v }, typing);
        return (
          <div className="sb-list-item" key={name} data-testid={`server-${name}`}>
            <EntryName
              label="Name"
              value={name}
              taken={names}
              testid={`server-${name}-name`}
              onRename={(to) => set(renameKey(servers, name, to))}
            />
            <div className="sb-field">
              <label htmlFor={`${name}-type`}>Type</label>
              <select
                id={`${name}-type`}
                value={type}
                onChange={(e) => {
                  const t = e.target.value as ServerType;
                  put(
                    t === 'builtin'
                      ? { builtin: 'documents' }
                      : t === 'command'
                        ? { command: 'npx', args: [] }
                        : { url: 'http://127.0.0.1:3000/mcp' },
                  );
                }}
              >
                <option value="builtin">built-in</option>
                <option value="command">stdio command</option>
                <option value="url">streamable HTTP</option>
              </select>
            </div>
            {'builtin' in s && (
              <div className="sb-field">
                <label htmlFor={`${name}-builtin`}>Built-in server</label>
                <select
                  id={`${name}-builtin`}
                  value={s.builtin}
                  onChange={(e) => put({ ...s, builtin: e.target.value })}
                >
                  {['documents', 'filesystem', 'shell', 'http', 'state'].map((b) => (
                    <option key={b}>{b}</option>
                  ))}
                </select>
              </div>
            )}
            {'command' in s && (
              <>
                <TextField
                  label="Command"
                  value={s.command}
                  onChange={(v) => put({ ...s, command: v }, true)}
                />
                <TextField
                  label="Arguments (one per line)"
                  multiline
                  value={(s.args ?? []).join('\n')}
                  onChange={(v) => put({ ...s, args: v.split('\n').filter((x) => x !== '') }, true)}
                />
                <JsonEditor
                  label="Environment (values: ${env:NAME} for secrets)"
                  value={s.env}
                  allowEmpty
                  onChange={(v) => {
                    const bad = v === undefined ? undefined : envProblem(v);
                    setEnvError(bad ?? '');
                    if (!bad) put({ ...s, env: v as Record<string, string> | undefined });
                  }}
                />
              </>
            )}
            {'url' in s && (
              <>
                <TextField label="URL" value={s.url} onChange={(v) => put({ ...s, url: v }, true)} />
                <McpConnect name={name} url={s.url} />
                <JsonEditor
                  label="Headers (values: ${env:NAME} for secrets)"
                  value={s.headers}
                  allowEmpty
                  onChange={(v) => {
                    const bad = v === undefined ? undefined : envProblem(v);
                    setEnvError(bad ?? '');
                    if (!bad) put({ ...s, headers: v as Record<string, string> | undefined });
                  }}
                />
              </>
            )}
            {envError && <div className="sb-field-error">{envError}</div>}
            <button
              type="button"
              onClick={() => set(Object.fromEntries(Object.entries(servers).filter(([k]) => k !== name)))}
            >
              Remove server {name}
            </button>
          </div>
        );
      })}
      <button
        type="button"
        data-testid="server-add"
        onClick={() => {
          let i = names.length + 1;
          while (names.includes(`server${i}`)) i++;
          set({ ...servers, [`server${i}`]: { builtin: 'documents' } });
        }}
      >
        Add MCP server
      </button>
    </fieldset>
  );
}

export function FlowSettings() {
  const { store } = useEditor();
  useDocVersion(store);
  const str = (k: string) => (typeof store.meta(k) === 'string' ? (store.meta(k) as string) : '');
  return (
    <section className="sb-inspector" aria-label="Flow settings" data-testid="flow-settings">
      <h2>Flow settings</h2>
      <TextField
        label="Name"
        value={str('name')}
        testid="flow-name"
        onChange={(v) => store.setMeta('name', v, true)}
      />
      <TextField
        label="Id"
        value={str('id')}
        testid="flow-id"
        help="Used as the file name and the server's key."
        onChange={(v) => store.setMeta('id', v, true)}
      />
      <TextField
        label="Description"
        multiline
        value={str('description')}
        testid="flow-description"
        onChange={(v) => store.setMeta('description', v || undefined, true)}
      />
      <ModelsEditor />
      <ServersEditor />
      <fieldset className="sb-fieldset">
        <legend>Budgets</legend>
        <SchemaForm
          schema={Budgets as unknown as JsonSchema}
          value={(store.meta('budgets') ?? {}) as Record<string, unknown>}
          refs={NO_REFS}
          onKeyChange={(k, v, typing) => {
            const b: Record<string, unknown> = { ...((store.meta('budgets') ?? {}) as object), [k]: v };
            if (v === undefined) Reflect.deleteProperty(b, k);
            store.setMeta('budgets', Object.keys(b).length ? b : undefined, typing);
          }}
        />
      </fieldset>
    </section>
  );
}
