/** Modal dialogs: paste JSON, keyboard shortcuts (Open… and the welcome are in Gallery.tsx). */
import { type ReactNode, useEffect, useRef, useState } from 'react';
import { openText } from './actions.js';
import { useEditor } from './context.js';

export function Dialog(props: { title: string; onClose(): void; children: ReactNode; testid: string }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
  }, []);
  return (
    <dialog
      ref={ref}
      className="sb-dialog"
      aria-label={props.title}
      data-testid={props.testid}
      onCancel={(e) => {
        e.preventDefault();
        props.onClose();
      }}
    >
      <header>
        <h2>{props.title}</h2>
        <button type="button" onClick={props.onClose} aria-label="Close" data-testid="dialog-close">
          ×
        </button>
      </header>
      <div className="sb-dialog-body">{props.children}</div>
    </dialog>
  );
}

export function PasteDialog({ onClose }: { onClose(): void }) {
  const services = useEditor();
  const [text, setText] = useState('');
  return (
    <Dialog title="Open flow JSON" onClose={onClose} testid="paste-dialog">
      <label htmlFor="sb-paste">Paste a flow document</label>
      <textarea
        id="sb-paste"
        rows={14}
        className="sb-json"
        value={text}
        data-testid="paste-text"
        onChange={(e) => setText(e.target.value)}
      />
      <div className="sb-dialog-actions">
        <button
          type="button"
          onClick={async () => {
            try {
              setText(await navigator.clipboard.readText());
            } catch {
              services.toast('The browser refused clipboard access; paste with Ctrl+V into the box', 'error');
            }
          }}
        >
          Read clipboard
        </button>
        <button
          type="button"
          data-testid="paste-open"
          disabled={!text.trim()}
          onClick={() => openText(services, text, 'pasted JSON') && onClose()}
        >
          Open
        </button>
      </div>
    </Dialog>
  );
}

export const SHORTCUTS: Array<[string, string]> = [
  ['Ctrl/⌘ Z', 'Undo'],
  ['Ctrl/⌘ Shift Z, Ctrl Y', 'Redo'],
  ['Ctrl/⌘ C / V', 'Copy / paste nodes (ids renewed, inner edges kept)'],
  ['Ctrl/⌘ D', 'Duplicate the selection'],
  ['Ctrl/⌘ A', 'Select everything'],
  ['Delete, Backspace', 'Delete the selection (a team with its members)'],
  ['Ctrl/⌘ S', 'Save to the server'],
  ['Ctrl/⌘ E', 'Export the flow as a file'],
  ['Ctrl/⌘ Shift L', 'Auto-layout'],
  ['F', 'Fit the flow in view at a readable zoom (large flows: centred on the start node)'],
  ['Shift F', 'Show the whole flow, however small'],
  ['Right-click, Shift F10', 'Menu of a node or edge: duplicate, breakpoint, copy as JSON, delete'],
  ['Drop a .json file on the canvas', 'Open it as the flow (checked by the validator)'],
  ['Shift + drag', 'Select with a box'],
  ['Ctrl/⌘ + click', 'Add to the selection'],
  ['Enter on a palette item', 'Add that node (into the selected team)'],
  ['Enter in the palette search', 'Add the first matching kind'],
  ['?', 'This help'],
  ['Esc', 'Clear the selection, close a dialog'],
];

export function HelpDialog({ onClose }: { onClose(): void }) {
  return (
    <Dialog title="Keyboard shortcuts" onClose={onClose} testid="shortcuts">
      <table className="sb-shortcuts">
        <tbody>
          {SHORTCUTS.map(([k, v]) => (
            <tr key={k}>
              <th scope="row">
                <kbd>{k}</kbd>
              </th>
              <td>{v}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h3>Edges</h3>
      <p className="sb-help">
        Drag from a node's right handle to hand over control, from a tool's bottom handle to an agent's
        top-left handle to grant tools, from an agent's bottom handle to delegate, from an observer to what it
        observes.
      </p>
    </Dialog>
  );
}
