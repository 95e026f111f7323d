/**
 * The Yjs history of each saved room, `DIR/rooms/<flow id>.ydoc` (a Yjs state update, replaced
 * atomically). The flow itself lives in the catalog; this file only lets a room that is opened
 * again continue the same document history, so that an editor still holding the old document
 * (after a server restart, or an idle room being dropped) merges back into it cleanly instead
 * of doubling every node. A missing or unreadable file costs that continuity, nothing else: the
 * room then starts from the catalog's flow.
 */
import { mkdir, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../store/atomic.js';
import { removeStaleTemps } from '../store/json-file.js';

export class RoomStates {
  /** The write or removal in progress per room: they are applied in the order asked. */
  private readonly chains = new Map<string, Promise<void>>();
  private made = false;
  /** Rooms whose temp files a crash may have left were swept once already. */
  private readonly swept = new Set<string>();

  constructor(
    readonly dir: string,
    private readonly fsync = true,
  ) {}

  /** Flow ids are `[A-Za-z0-9_][A-Za-z0-9_.:-]*`: never hidden, never `..`; `:` is encoded. */
  file(id: string): string {
    return join(this.dir, `${encodeURIComponent(id)}.ydoc`);
  }

  async read(id: string): Promise<Uint8Array | undefined> {
    await this.chains.get(id);
    try {
      return new Uint8Array(await readFile(this.file(id)));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
  }

  write(id: string, state: Uint8Array): Promise<void> {
    return this.chain(id, async () => {
      if (!this.made) {
        // Inside the existing data directory only (one that vanished is not made again).
        await mkdir(this.dir, { mode: 0o700 }).catch((e: NodeJS.ErrnoException) => {
          if (e.code !== 'EEXIST') throw e;
        });
        this.made = true;
      }
      if (!this.swept.has(id)) {
        await removeStaleTemps(this.file(id));
        this.swept.add(id);
      }
      await writeFileAtomic(this.file(id), state, { fsync: this.fsync });
    });
  }

  remove(id: string): Promise<void> {
    return this.chain(id, async () => {
      await unlink(this.file(id)).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'ENOENT') throw e;
      });
    });
  }

  private chain(id: string, op: () => Promise<void>): Promise<void> {
    const next = (this.chains.get(id) ?? Promise.resolve()).catch(() => {}).then(op);
    const settled = next.catch(() => {});
    this.chains.set(id, settled);
    void settled.then(() => {
      if (this.chains.get(id) === settled) this.chains.delete(id);
    });
    return next;
  }
}
