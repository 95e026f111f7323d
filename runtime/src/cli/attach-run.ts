/**
 * `switchboard run FLOW --attach URL [--token T]`: the run goes on locally and its events are
 * streamed to a `switchboard serve` server, where every open editor of the flow sees it live
 * and sends its commands back (see ../attach/client.ts). What happens to the link is said on
 * stderr; stdout stays the run's answer.
 */
import { randomBytes } from 'node:crypto';
import type { Flow, RunEvent } from '@switchboard/schemas';
import { AttachClient, attachUrl } from '../attach/client.js';
import type { RunCommand } from '../engine/types.js';
import type { CliContext } from './context.js';

/** How long the CLI waits at the end for the server to hold the last events. */
const DRAIN_MS = 15_000;

export interface AttachedCli {
  /** The id the local run must carry (RunOptions.runId). */
  localRunId: string;
  push(ev: RunEvent): void;
  /** Where relayed commands go, once the run's handle exists. */
  bind(send: (cmd: RunCommand) => void): void;
  /** At the end: waits for the server to hold every event, then closes. */
  finish(): Promise<void>;
}

export function startAttach(
  p: { url: string; token?: string; flow: Flow; input: unknown; drainMs?: number },
  ctx: CliContext,
): AttachedCli {
  attachUrl(p.url); // a bad address is a usage error before the run starts
  const localRunId = `run_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  let send: ((cmd: RunCommand) => void) | undefined;
  const early: RunCommand[] = [];
  const client = new AttachClient({
    url: p.url,
    ...(p.token ? { token: p.token } : {}),
    flow: p.flow,
    input: p.input,
    localRunId,
    notice: (line) => ctx.err(line),
    onCommand: (cmd) => {
      ctx.err(`attach: ${cmd.type} from the editor\n`);
      if (send) send(cmd);
      else early.push(cmd);
    },
  });
  client.start();
  return {
    localRunId,
    push: (ev) => client.push(ev),
    bind(s) {
      send = s;
      for (const c of early.splice(0)) s(c);
    },
    async finish() {
      const wait = p.drainMs ?? DRAIN_MS;
      if (client.status !== 'attached' && client.status !== 'refused' && client.unacked > 0)
        ctx.err(
          `attach: the run has ended here; waiting up to ${Math.round(wait / 1000)} s for the server to take its last ${client.unacked} event(s)\n`,
        );
      const all = await client.drain(wait);
      if (client.status !== 'refused')
        ctx.err(
          all
            ? `attach: the server holds the whole run (${client.serverRunId ?? '?'})\n`
            : `attach: the server did not acknowledge every event (it holds up to seq ${client.ackedSeq})\n`,
        );
      client.close();
    },
  };
}
