/**
 * Who this editor is to co-editors: a name and a colour, kept in this browser. Not an account:
 * the server trusts nobody's name; it only labels cursors and selections.
 */
import type { KeyValueStorage } from '../model/persist.js';

export interface Identity {
  name: string;
  color: string;
}

const KEY = 'switchboard:identity';
const COLORS = ['#e11d48', '#2563eb', '#16a34a', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#4d7c0f'];
const ANIMALS = ['Otter', 'Heron', 'Lynx', 'Finch', 'Badger', 'Marten', 'Ibis', 'Gecko', 'Puffin', 'Koala'];

function random(n: number): number {
  const a = new Uint32Array(1);
  crypto.getRandomValues(a);
  return a[0]! % n;
}

export function isIdentity(v: unknown): v is Identity {
  return (
    !!v &&
    typeof v === 'object' &&
    typeof (v as Identity).name === 'string' &&
    (v as Identity).name.length > 0 &&
    (v as Identity).name.length <= 40 &&
    typeof (v as Identity).color === 'string' &&
    /^#[0-9a-f]{6}$/i.test((v as Identity).color)
  );
}

/** The stored identity, or a new random one (stored for next time). */
export function loadIdentity(storage: KeyValueStorage | undefined): Identity {
  try {
    const saved = storage?.getItem(KEY);
    if (saved) {
      const v: unknown = JSON.parse(saved);
      if (isIdentity(v)) return v;
    }
  } catch {
    // Unreadable: make a new one.
  }
  const id: Identity = {
    name: `Guest ${ANIMALS[random(ANIMALS.length)]}`,
    color: COLORS[random(COLORS.length)]!,
  };
  try {
    storage?.setItem(KEY, JSON.stringify(id));
  } catch {
    // Storage disabled: a new name per visit.
  }
  return id;
}

export function saveIdentity(storage: KeyValueStorage | undefined, id: Identity): void {
  try {
    storage?.setItem(KEY, JSON.stringify(id));
  } catch {
    // Storage disabled.
  }
}
