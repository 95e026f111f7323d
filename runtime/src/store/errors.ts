/**
 * Store failures that must reach the operator: a damaged file is reported with its path and
 * what is wrong, and never silently replaced by empty data.
 */
export type StoreErrorCode =
  | 'locked'
  | 'empty-file'
  | 'bom'
  | 'not-json'
  | 'wrong-schema'
  | 'corrupt-log'
  | 'io';

export class StoreError extends Error {
  override readonly name = 'StoreError';
  constructor(
    readonly code: StoreErrorCode,
    message: string,
    /** The file the problem is about. */
    readonly file?: string,
  ) {
    super(message);
  }
}

/** Thrown when another live process owns the data directory. */
export class StoreLockedError extends StoreError {
  constructor(
    readonly pid: number,
    file: string,
  ) {
    super('locked', `the data directory is locked by pid ${pid} (${file})`, file);
  }
}
