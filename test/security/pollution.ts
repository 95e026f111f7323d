/**
 * Watching `Object.prototype` for pollution: a snapshot of its own properties, a check that names
 * what changed, and a repair so one polluting case does not poison the rest of the test file.
 */
const BASELINE = new Map<string | symbol, PropertyDescriptor | undefined>(
  Reflect.ownKeys(Object.prototype).map((k) => [k, Object.getOwnPropertyDescriptor(Object.prototype, k)]),
);
// `byNode["toString"].turns += 1` writes onto Object.prototype.toString itself: its own keys too.
const FUNCTION_KEYS = new Map<string | symbol, number>(
  Reflect.ownKeys(Object.prototype).flatMap((k) => {
    const v = Object.getOwnPropertyDescriptor(Object.prototype, k)?.value;
    return typeof v === 'function' ? [[k, Reflect.ownKeys(v).length] as const] : [];
  }),
);

/** Names of properties added to (or changed on) `Object.prototype` since this module loaded. */
export function pollution(): string[] {
  const out: string[] = [];
  for (const k of Reflect.ownKeys(Object.prototype)) {
    const now = Object.getOwnPropertyDescriptor(Object.prototype, k);
    const was = BASELINE.get(k);
    if (!was) out.push(String(k));
    else if (now?.value !== was.value || now?.get !== was.get || now?.set !== was.set) out.push(String(k));
  }
  for (const [k, n] of FUNCTION_KEYS) {
    const v = Object.getOwnPropertyDescriptor(Object.prototype, k)?.value;
    if (typeof v === 'function' && Reflect.ownKeys(v).length !== n)
      out.push(`Object.prototype.${String(k)}: ${Reflect.ownKeys(v).map(String).join(', ')}`);
  }
  if (Object.getPrototypeOf(Object.prototype) !== null) out.push('[[Prototype]] of Object.prototype');
  return out;
}

/** Undoes any pollution (after it was reported), so later cases start clean. */
export function repair(): void {
  for (const k of Reflect.ownKeys(Object.prototype)) {
    const was = BASELINE.get(k);
    if (!was) delete (Object.prototype as Record<string | symbol, unknown>)[k];
    else Object.defineProperty(Object.prototype, k, was);
  }
}

/** The names the issue asks every entry point to be driven with. */
export const HOSTILE_NAMES = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty'] as const;
/** Of those, the ones that must be refused as ids (the others are ordinary, if odd, names). */
export const RESERVED_NAMES = ['__proto__', 'constructor', 'prototype'] as const;
