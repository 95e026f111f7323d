/**
 * `switchboard pin FLOW NODE --from RUN_ID[:TURN] [--data DIR] [--pins FILE]`: pins NODE's output
 * from a stored run (its turn TURN, from 1, or its last) in the pins file beside the flow
 * (`FLOW.pins.json`, or `--pins FILE`); later `switchboard run FLOW` uses it instead of running
 * the node. `switchboard pin FLOW --list` shows the pins (stale ones marked), `switchboard pin
 * FLOW NODE --remove` unpins.
 *
 * Exit codes: 0 done, 1 the data could not be read, 2 usage (bad flags, no such node, run or
 * turn, an invalid pins file).
 */
import type { Command } from 'commander';
import { type CliContext, EXIT } from '../context.js';
import { readValidFlow } from '../read-flow.js';

interface PinCliOptions {
  from?: string;
  data?: string;
  pins?: string;
  list?: boolean;
  remove?: boolean;
}

async function pinCommand(
  flowFile: string,
  nodeId: string | undefined,
  opts: PinCliOptions,
  ctx: CliContext,
): Promise<number> {
  const modes = [opts.from !== undefined, opts.list === true, opts.remove === true].filter(Boolean).length;
  if (modes !== 1) {
    ctx.err('switchboard pin: give one of --from RUN_ID[:TURN], --list or --remove\n');
    return EXIT.usage;
  }
  if (!opts.list && nodeId === undefined) {
    ctx.err('switchboard pin: name the NODE to pin or unpin\n');
    return EXIT.usage;
  }
  const flow = await readValidFlow('pin', flowFile, ctx);
  if (!flow) return EXIT.usage;
  const { pinIsStale, withPin, withoutPin } = await import('@switchboard/schemas');
  const { PinError, parsePinRef } = await import('../../pins/extract.js');
  const { pinsPathFor, readPinsFile, writePinsFile } = await import('../../pins/file.js');
  const { pinFromStoredRun } = await import('../pin-flags.js');
  const file = opts.pins ?? pinsPathFor(flowFile);
  try {
    const doc = await readPinsFile(file, true);
    if (opts.list) {
      if (doc.pins.length === 0) ctx.err(`no pins in ${file}\n`);
      for (const p of doc.pins) {
        const node = flow.nodes.find((n) => n.id === p.nodeId);
        const state = !node
          ? ' (no such node in the flow)'
          : pinIsStale(p, node.config)
            ? ' (stale: the node changed since)'
            : '';
        ctx.out(`${p.nodeId}\t${p.fromRun}:${p.fromTurn}${state}\n`);
      }
      return EXIT.ok;
    }
    if (opts.remove) {
      if (!doc.pins.some((p) => p.nodeId === nodeId)) {
        ctx.err(`switchboard pin: node "${nodeId}" is not pinned in ${file}\n`);
        return EXIT.usage;
      }
      await writePinsFile(file, withoutPin(doc, nodeId!));
      ctx.err(`unpinned "${nodeId}" in ${file}\n`);
      return EXIT.ok;
    }
    const { runId, turn } = parsePinRef(opts.from!, '--from');
    const pin = await pinFromStoredRun(flow, nodeId!, runId, turn, opts.data);
    await writePinsFile(file, withPin(doc, pin));
    ctx.err(`pinned "${nodeId}" to turn ${pin.fromTurn} of run ${runId} in ${file}\n`);
    return EXIT.ok;
  } catch (e) {
    if (e instanceof PinError) {
      ctx.err(`switchboard pin: ${e.message}\n`);
      return EXIT.usage;
    }
    ctx.err(`switchboard pin: ${(e as Error).message}\n`);
    return EXIT.failed;
  }
}

export function registerPin(program: Command, ctx: CliContext): void {
  program
    .command('pin')
    .description(
      "Pin a node's output from a stored run, so later runs of the flow use it instead of running the node.",
    )
    .argument('<flow>', 'flow JSON file')
    .argument('[node]', 'the node to pin or unpin')
    .option('--from <run[:turn]>', "the stored run (and the node's turn there, from 1; default its last)")
    .option('--data <dir>', 'the data directory the run is stored in')
    .option('--pins <file>', 'the pins file (default: FLOW.pins.json beside the flow)')
    .option('--list', 'list the pins')
    .option('--remove', 'unpin the node')
    .action(async (flow: string, node: string | undefined, opts: PinCliOptions) => {
      ctx.setExit(await pinCommand(flow, node, opts, ctx));
    });
}
