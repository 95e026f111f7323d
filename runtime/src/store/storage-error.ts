/**
 * Faults of the disk itself, named so an operator can act on them: `storage_full` (no space or
 * quota left: free some), `storage_unavailable` (the data directory is gone, read-only or not
 * ours to write: mount or fix it), `storage_io` (the disk failed a read or write: check it).
 * Each names the file or directory it happened to.
 */
export type StorageCode = 'storage_full' | 'storage_unavailable' | 'storage_io';

const FULL = new Set(['ENOSPC', 'EDQUOT']);
const UNAVAILABLE = new Set(['ENOENT', 'EROFS', 'EACCES', 'EPERM', 'ENOTDIR']);

/** The HTTP status an API answer carries for each. */
export const STORAGE_HTTP_STATUS: Record<StorageCode, number> = {
  storage_full: 507,
  storage_unavailable: 503,
  storage_io: 500,
};

const WHAT: Record<StorageCode, string> = {
  storage_full: 'the disk is full',
  storage_unavailable: 'the data directory is unavailable',
  storage_io: 'the disk failed',
};

export class StorageError extends Error {
  override readonly name = 'StorageError';
  constructor(
    readonly code: StorageCode,
    message: string,
    /** The file or directory it happened to. */
    readonly path: string | undefined,
    /** The errno code behind it (ENOSPC, EIO, …). */
    readonly errno: string | undefined,
  ) {
    super(message);
  }

  toJSON(): { code: StorageCode; message: string; path?: string; errno?: string } {
    return {
      code: this.code,
      message: this.message,
      ...(this.path ? { path: this.path } : {}),
      ...(this.errno ? { errno: this.errno } : {}),
    };
  }
}

/** Whether `e` is an errno error of a file operation (as node:fs throws). */
export function isFsError(e: unknown): e is NodeJS.ErrnoException {
  return (
    e instanceof Error &&
    typeof (e as NodeJS.ErrnoException).code === 'string' &&
    /^E[A-Z]+$/.test((e as NodeJS.ErrnoException).code!) &&
    (typeof (e as NodeJS.ErrnoException).syscall === 'string' ||
      typeof (e as NodeJS.ErrnoException).errno === 'number')
  );
}

export function storageCodeOf(errno: string | undefined): StorageCode {
  if (errno && FULL.has(errno)) return 'storage_full';
  if (errno && UNAVAILABLE.has(errno)) return 'storage_unavailable';
  return 'storage_io';
}

/**
 * Names a file-system failure; `path` is used when the error does not carry one. An error
 * that is already a StorageError is returned as it is.
 */
export function toStorageError(e: unknown, path?: string): StorageError {
  if (e instanceof StorageError) return e;
  const err = e as NodeJS.ErrnoException;
  const errno = typeof err?.code === 'string' ? err.code : undefined;
  const code = storageCodeOf(errno);
  const where = err?.path ?? path ?? (err as { file?: string })?.file;
  const detail = errno ? `${errno}` : String(err?.message ?? e);
  return new StorageError(code, `${WHAT[code]} (${detail}${where ? ` at ${where}` : ''})`, where, errno);
}

/** Whether `e` is a storage fault (a StorageError, or an errno error of a file operation). */
export function isStorageFault(e: unknown): boolean {
  return e instanceof StorageError || isFsError(e);
}
