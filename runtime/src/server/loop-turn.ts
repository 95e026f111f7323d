/**
 * The event loop as a run's host sees it: which turn of the loop this is, and how long it has
 * been held. A run whose steps never wait for I/O (scripted models, a checkpoint that returns
 * at once) would otherwise run to its end in one turn: nothing written, nothing sent, no other
 * run or socket served until then. Its host lets the loop turn at a turn boundary once the
 * loop has been held for a slice, so events stream out as the run goes and the latency anyone
 * else sees stays bounded by the slice.
 */

let turn = 0;
let start = 0;
let marked = false;
const unmark = (): void => {
  marked = false;
};

function mark(): void {
  if (marked) return;
  // The mark clears in the next check phase, i.e. once the loop has turned.
  marked = true;
  turn++;
  start = performance.now();
  setImmediate(unmark);
}

/** A number that changes whenever the event loop has turned since the last call. */
export function loopTurn(): number {
  mark();
  return turn;
}

/** When (performance.now()) this turn of the event loop was first asked about. */
export function loopTurnStart(): number {
  mark();
  return start;
}

/**
 * Resolves once the loop has passed a poll phase (sockets served). An immediate queued from
 * an immediate runs in the next iteration, so two hops pass one even from the check phase.
 */
export function afterPoll(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}
