/**
 * A full disk for real: a server whose data directory is on a 4 MiB tmpfs, nearly filled by a
 * ballast, takes runs until the disk refuses them; then the ballast goes and the server
 * restarts (test/storage/tmpfs-scenario.ts does it, in a mount namespace of its own).
 *
 * Decision (documented in docs/storage.md): this test never skips. It needs `mount -t tmpfs`,
 * which root has (CI runs as root) and which `unshare -Urm` gives any user where unprivileged
 * user namespaces are enabled; the scenario runs under `unshare -m` as root and `unshare -Urm`
 * otherwise. When neither can mount, the test FAILS and says why.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const SCENARIO = fileURLToPath(new URL('./storage/tmpfs-scenario.ts', import.meta.url));
const RUNTIME = fileURLToPath(new URL('../runtime/', import.meta.url));

interface Counters {
  turns: number;
  promptTokens: number;
  completionTokens: number;
  toolCalls: number;
}

it('fill the disk with runs, free it, restart: named refusals, nothing phantom, nothing past the log, exact counters', () => {
  const mnt = mkdtempSync(join(tmpdir(), 'sb-tmpfs-'));
  try {
    const unshare = process.getuid?.() === 0 ? ['-m'] : ['-Urm'];
    const r = spawnSync(
      'unshare',
      [...unshare, process.execPath, '--conditions=source', '--import', 'tsx', SCENARIO, mnt],
      { cwd: RUNTIME, encoding: 'utf8', timeout: 180_000 },
    );
    if (r.error || r.status !== 0)
      throw new Error(
        `the real-filesystem scenario could not run (unshare ${unshare.join(' ')}; it needs root or unprivileged user namespaces to mount a tmpfs): ${r.error?.message ?? `exit ${r.status}`}\n${r.stderr}`,
      );
    const d = JSON.parse(r.stdout.trim().split('\n').at(-1)!);
    if (d.mountFailed) throw new Error(`cannot mount the test tmpfs: ${d.mountFailed}`);
    const baseline = d.baseline as Counters;
    expect(baseline.turns).toBe(8);

    // Low space is seen before it is hit.
    expect(d.healthLow.storage.lowSpace).toBe(true);
    expect(d.healthLow.warnings[0]).toMatch(/^storage_low: /);

    // Every refusal has a name, a status and a path.
    expect(d.accepted).toBeGreaterThan(0);
    expect(d.refusals.length).toBeGreaterThan(0);
    for (const x of d.refusals) {
      expect(x).toMatchObject({ status: 507, code: 'storage_full' });
      expect(x.path).toBeTruthy();
    }
    // Health says degraded, with the free space and the last error.
    expect(d.healthFull.status).toBe('degraded');
    expect(d.healthFull.storage.lastError.code).toBe('storage_full');
    expect(d.healthFull.storage.freeBytes).toBeLessThan(64 * 1024);

    // Nothing phantom: the list and runs/ hold exactly the runs whose start was answered 201.
    expect(d.listed).toEqual(d.expectedListed);
    expect(d.folders).toEqual(d.expectedListed);

    // Nothing past the log: each entry is what its log holds; a run the disk stopped says so.
    let paused = 0;
    for (const w of d.whileFull) {
      expect(w.live).toBe(false);
      expect(w.lastSeq).toBe(w.logSeq);
      expect(w.counters).toEqual(w.logCounters);
      if (w.status !== 'completed') {
        expect(w).toMatchObject({ status: 'paused', pausedBy: 'storage_full' });
        paused++;
      }
    }
    expect(paused).toBeGreaterThan(0);

    // After the restart with space again: every run ends, counted exactly once.
    expect(d.recovered.resumed.length).toBe(paused);
    expect(d.healthAfter.status).toBe('ok');
    for (const a of d.after) {
      expect(a.seqsContiguous).toBe(true);
      expect(a.counters).toEqual(a.logCounters);
      if (a.status === 'completed') {
        expect(a.counters).toEqual(baseline);
        expect(a.lastEvent).toBe('run.completed');
      } else expect(a).toMatchObject({ status: 'failed', error: 'storage_full', lastEvent: 'run.failed' });
    }
  } finally {
    rmSync(mnt, { recursive: true, force: true });
  }
}, 200_000);
