/** What every CLI command receives: its output streams and a way to set the exit code. */
export const EXIT = { ok: 0, failed: 1, usage: 2, needsHuman: 3 } as const;

export interface CliContext {
  out: (s: string) => void;
  err: (s: string) => void;
  setExit: (code: number) => void;
  /** True when stderr is a terminal (progress lines may redraw). */
  isTTY: boolean;
  /** Read stdin when a command needs it (answers, consent); undefined when there is none. */
  stdin?: NodeJS.ReadableStream;
}
