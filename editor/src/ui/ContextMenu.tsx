/**
 * Right-click on a node or an edge: duplicate, delete, breakpoint, copy as JSON. The menu takes
 * focus, arrow keys move through it, Enter runs an item, Escape (or a click elsewhere) closes it.
 */
import { type KeyboardEvent, useEffect, useRef } from 'react';
import { useEditor, useKeyed } from './context.js';

export interface MenuTarget {
  kind: 'node' | 'edge';
  id: string;
  /** Where it opens, in pixels from the canvas's top-left corner. */
  x: number;
  y: number;
}

interface Item {
  id: string;
  label: string;
  run(): void | Promise<void>;
  disabled?: string;
}

async function toClipboard(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

export function ContextMenu({ target, onClose }: { target: MenuTarget; onClose(): void }) {
  const { store, runs, toast } = useEditor();
  const box = useRef<HTMLDivElement>(null);
  const breakpoint = useKeyed(store.runState.breakpoints, target.kind === 'node' ? target.id : '');
  const { id } = target;
  const name = store.displayName(id);

  const copied = async (text: string, what: string) => {
    if (await toClipboard(text)) toast(`${what} copied as JSON`);
    else toast('The browser refused clipboard access', 'error');
  };
  const items: Item[] =
    target.kind === 'node'
      ? [
          {
            id: 'duplicate',
            label: 'Duplicate',
            run: () => {
              store.select({ nodes: [id] });
              store.duplicateSelection();
            },
          },
          {
            id: 'breakpoint',
            label: breakpoint ? 'Remove breakpoint' : 'Set breakpoint',
            run: () => runs?.toggleBreakpoint(id),
            disabled: runs ? undefined : 'Breakpoints need the Switchboard server',
          },
          {
            id: 'copy-json',
            label: 'Copy as JSON',
            run: () => {
              store.select({ nodes: [id] });
              const frag = store.copySelection();
              if (frag) return copied(JSON.stringify(frag, null, 2), name);
            },
          },
          {
            id: 'delete',
            label: 'Delete',
            run: () => {
              store.select({ nodes: [id] });
              store.deleteSelection();
            },
          },
        ]
      : [
          {
            id: 'copy-json',
            label: 'Copy as JSON',
            run: () => {
              const edge = store.readEdge(id);
              if (edge) return copied(JSON.stringify(edge, null, 2), `Edge ${id}`);
            },
          },
          {
            id: 'delete',
            label: 'Delete',
            run: () => {
              store.select({ edges: [id] });
              store.deleteSelection();
            },
          },
        ];

  useEffect(() => {
    box.current?.querySelector<HTMLButtonElement>('button:not(:disabled)')?.focus();
    const away = (e: MouseEvent) => {
      if (!box.current?.contains(e.target as Node)) onClose();
    };
    window.addEventListener('mousedown', away, true);
    return () => window.removeEventListener('mousedown', away, true);
  }, [onClose]);

  const onKeyDown = (e: KeyboardEvent) => {
    const buttons = [...(box.current?.querySelectorAll<HTMLButtonElement>('button:not(:disabled)') ?? [])];
    const at = buttons.indexOf(document.activeElement as HTMLButtonElement);
    if (e.key === 'Escape') onClose();
    else if (e.key === 'ArrowDown') buttons[(at + 1) % buttons.length]?.focus();
    else if (e.key === 'ArrowUp') buttons[(at - 1 + buttons.length) % buttons.length]?.focus();
    else return;
    // The editor's own shortcuts (Escape clears the selection) must not see these keys.
    e.preventDefault();
    e.stopPropagation();
  };

  return (
    <div
      ref={box}
      className="sb-context-menu"
      role="menu"
      aria-label={`${target.kind === 'node' ? 'Node' : 'Edge'} ${name}`}
      data-testid="context-menu"
      data-target={id}
      style={{ left: target.x, top: target.y }}
      onKeyDown={onKeyDown}
      onContextMenu={(e) => e.preventDefault()}
    >
      {items.map((item) => (
        <button
          key={item.id}
          type="button"
          role="menuitem"
          data-testid={`menu-${item.id}`}
          disabled={!!item.disabled}
          title={item.disabled}
          onClick={() => {
            onClose();
            void item.run();
          }}
        >
          {item.label}
        </button>
      ))}
    </div>
  );
}
