import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type BatteryFigures, runBattery } from './battery.js';

const FULL = process.env.SWITCHBOARD_FULL === '1';
const profile = FULL ? { runs: 200, kills: 50 } : { runs: 40, kills: 15 };
const quick = FULL ? { runs: 100, kills: 30 } : { runs: 16, kills: 8 };

const checks = (f: BatteryFigures, p: { runs: number; kills: number }) => {
  expect(f.runsStarted).toBeGreaterThanOrEqual(p.runs);
  expect(f.kills).toBe(p.kills);
  expect(f.ackedLost).toBe(0);
  expect(f.unreadableFiles).toBe(0);
  expect(f.leftRunning).toBe(0);
  expect(f.notHandledWithin5s).toBe(0);
  expect(f.seqGaps).toBe(0);
  expect(f.wrongOutput).toBe(0);
  expect(f.otherFinal).toBe(0);
  expect(f.duplicateExecutions).toBe(0);
  expect(f.completed + f.interrupted).toBe(f.runsStarted);
  expect(f.killedRuns).toBeGreaterThan(0);
  expect(f.ackedEvents).toBeGreaterThan(0);
  // The provisional client: nothing told durable changed, and its final view is the log.
  expect(f.provisionalEvents).toBeGreaterThan(0);
  expect(f.provisionalDurableEvents).toBeGreaterThan(0);
  expect(f.provisionalDurableLost).toBe(0);
  expect(f.provisionalRuns).toBeGreaterThanOrEqual(f.runsStarted);
  expect(f.provisionalViewMismatches).toBe(0);
  expect(f.provisionalProblems).toBe(0);
  // A kill -9 loses nothing the OS has: no event a live view got is ever replaced (only a power
  // loss could do that, for events above the durable seq).
  expect(f.provisionalSuperseded).toBe(0);
};

async function battery(p: { runs: number; kills: number; latencyMs?: number }): Promise<void> {
  const seed = Number(process.env.SWITCHBOARD_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
  // The seed reproduces the kill schedule: SWITCHBOARD_CRASH_SEED=<seed>.
  console.log(`kill battery seed ${seed}`);
  const base = mkdtempSync(join(tmpdir(), 'sb-crash-'));
  try {
    const f = await runBattery({ dir: join(base, 'data'), ...p, seed, log: (l) => console.log(l) });
    console.log(
      JSON.stringify({
        ...f,
        restartMs: undefined,
        recoveryMs: undefined,
        restartMsMax: Math.max(...f.restartMs),
        recoveryMsMax: Math.max(...f.recoveryMs),
      }),
    );
    checks(f, p);
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

describe(`kill -9 battery (${FULL ? 'full' : 'CI'} profile: ${profile.runs} runs, ${profile.kills} kills)`, () => {
  it(
    'loses no acknowledged event, leaves no run running, resumes to the same output, never runs a tool twice',
    () => battery(profile),
    FULL ? 1_800_000 : 600_000,
  );

  // Replies without latency: the turns between tool calls need no I/O, so they are checkpointed
  // in slices, not one by one, and a resumed run replays several of them before it reaches a
  // call that was in flight (which the journal must still recognise).
  it(
    'the same with turns that need no I/O between the tool calls',
    () => battery({ ...quick, latencyMs: 0 }),
    FULL ? 1_800_000 : 600_000,
  );
});
