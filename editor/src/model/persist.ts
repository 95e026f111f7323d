/**
 * Unsaved work survives a reload: the serialized flow is kept in localStorage after every edit,
 * with the text last saved or exported, so the editor can tell whether there is unsaved work.
 */
export interface KeyValueStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

const DRAFT = 'switchboard:draft';
const SAVED = 'switchboard:saved';

export class DraftStore {
  constructor(private readonly storage: KeyValueStorage | undefined) {}

  load(): string | undefined {
    return this.read(DRAFT);
  }

  save(text: string): void {
    this.write(DRAFT, text);
  }

  /** Remembers `text` as saved (to the server or a file). */
  markSaved(text: string): void {
    this.write(SAVED, text);
  }

  isSaved(text: string): boolean {
    return this.read(SAVED) === text;
  }

  clear(): void {
    try {
      this.storage?.removeItem(DRAFT);
    } catch {
      // Storage may be disabled (private windows); the editor still works.
    }
  }

  private read(key: string): string | undefined {
    try {
      return this.storage?.getItem(key) ?? undefined;
    } catch {
      return undefined;
    }
  }

  private write(key: string, value: string): void {
    try {
      this.storage?.setItem(key, value);
    } catch {
      // Quota exceeded or storage disabled: keep working; the draft is simply not kept.
    }
  }
}
