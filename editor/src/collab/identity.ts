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
/**
 * Eight colours people tell apart, each dark enough for white initials at 4.5:1 or more (WCAG AA):
 * up to eight people in a room each get one of their own (`assignColors`).
 */
export const PALETTE = [
  '#e11d48',
  '#2563eb',
  '#15803d',
  '#b45309',
  '#7c3aed',
  '#0e7490',
  '#be185d',
  '#4d7c0f',
];
const COLORS = PALETTE;
// Distinct first letters, so that two guests rarely share a chip's initial.
const ANIMALS = [
  'Otter',
  'Heron',
  'Lynx',
  'Finch',
  'Badger',
  'Marten',
  'Ibis',
  'Gecko',
  'Puffin',
  'Koala',
  'Alpaca',
  'Crane',
  'Dingo',
  'Eland',
  'Jackal',
  'Newt',
  'Quokka',
  'Raven',
  'Stoat',
  'Tapir',
  'Vole',
  'Walrus',
  'Yak',
  'Zebu',
];

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

/** A display name as people type it: trimmed, at most 40 characters; undefined when empty. */
export function cleanName(raw: string): string | undefined {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
  const name = [...raw.replace(/[\u0000-\u001f\u007f]/g, ' ').trim()].slice(0, 40).join('').trim();
  return name || undefined;
}

/**
 * The colour each person in a room is shown with, the same in every browser: in awareness
 * client order (lowest id first), each person keeps the colour they prefer (their stored one)
 * unless someone before them took it, and then gets the first palette colour nobody has. Up to
 * eight people all differ; beyond that colours repeat, in palette order.
 */
export function assignColors(
  people: ReadonlyArray<{ clientId: number; color: string }>,
): Map<number, string> {
  const out = new Map<number, string>();
  const taken = new Set<string>();
  const ordered = [...people].sort((a, b) => a.clientId - b.clientId);
  let overflow = 0;
  for (const p of ordered) {
    const wanted = p.color.toLowerCase();
    let color: string | undefined;
    if (PALETTE.includes(wanted) && !taken.has(wanted)) color = wanted;
    else color = PALETTE.find((c) => !taken.has(c));
    if (!color) color = PALETTE[overflow++ % PALETTE.length]!;
    taken.add(color);
    out.set(p.clientId, color);
  }
  return out;
}
