/**
 * A map whose readers subscribe to one key. Node components read their own entry through
 * `useSyncExternalStore`, so a change to one node's entry re-renders that node and nothing else.
 */
export class KeyedStore<V> {
  private readonly values = new Map<string, V>();
  private readonly listeners = new Map<string, Set<() => void>>();
  private readonly allListeners = new Set<() => void>();
  private keyCount = 0;
  /** Changes when a key gains or loses its entry (not when an entry's value changes). */
  keysVersion = 0;

  constructor(private readonly fallback: V) {}

  get(key: string): V {
    return this.values.has(key) ? this.values.get(key)! : this.fallback;
  }

  /** Sets one entry; listeners of that key run only when the value changed (by `Object.is`). */
  set(key: string, value: V): void {
    if (Object.is(this.get(key), value)) return;
    if (Object.is(value, this.fallback)) this.values.delete(key);
    else this.values.set(key, value);
    this.countKeys();
    this.notify(key);
  }

  /** Replaces every entry; notifies only the keys whose value changed. */
  replaceAll(entries: Map<string, V>): void {
    const keys = new Set([...this.values.keys(), ...entries.keys()]);
    const changed: string[] = [];
    let keysChanged = false;
    for (const k of keys) {
      const next = entries.has(k) ? entries.get(k)! : this.fallback;
      if (Object.is(this.get(k), next)) continue;
      const had = this.values.has(k);
      if (Object.is(next, this.fallback)) this.values.delete(k);
      else this.values.set(k, next);
      if (had !== this.values.has(k)) keysChanged = true;
      changed.push(k);
    }
    if (keysChanged) this.keysVersion++;
    this.keyCount = this.values.size;
    for (const k of changed) this.notify(k);
  }

  private countKeys(): void {
    if (this.values.size === this.keyCount) return;
    this.keyCount = this.values.size;
    this.keysVersion++;
  }

  /** The keys that hold an entry. */
  keys(): IterableIterator<string> {
    return this.values.keys();
  }

  entries(): IterableIterator<[string, V]> {
    return this.values.entries();
  }

  subscribe(key: string, fn: () => void): () => void {
    let set = this.listeners.get(key);
    if (!set) {
      set = new Set();
      this.listeners.set(key, set);
    }
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0) this.listeners.delete(key);
    };
  }

  /** Listens to every change (panels that list all entries). */
  subscribeAll(fn: () => void): () => void {
    this.allListeners.add(fn);
    return () => this.allListeners.delete(fn);
  }

  private notify(key: string): void {
    for (const fn of this.listeners.get(key) ?? []) fn();
    for (const fn of this.allListeners) fn();
  }
}
