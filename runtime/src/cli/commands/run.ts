/**
 * `switchboard run FLOW --input TEXT | --input-file F [--answers F] [--events pretty|jsonl|none]
 *  [--model NAME=BASEURL]… [--trust NAME]… [--allow-outbound DEST]… [--allow-secret NAME=HOST]…
 *  [--secrets-config FILE]`: runs a flow headless, under the operator's outbound and secrets
 *  policy (see ../operator-flags.ts).
 *
 * stdout carries the final answer (or, with `--events jsonl`, every event as one JSON line, the
 * answer being in `run.completed`); progress goes to stderr. Exit codes: 0 completed, 1 failed
 * or cancelled, 2 invalid flow or usage (or a stdio command without consent), 3 a human answer
 * was needed and none could be given.
 */
import { readFile, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { Flow, DEFAULT_LIMITS as Limits, ModelConfigT, RunEvent } from '@switchboard/schemas';
import { dict, ownValue } from '@switchboard/schemas/core';
import type { Command } from 'commander';
import type { RunOptions } from '../../engine/types.js';
import { type CliContext, EXIT } from '../context.js';
import { addOperatorFlags, type OperatorFlags, operatorPolicyOf } from '../operator-flags.js';
import { addPinFlags, type PinFlags } from '../pin-flags.js';
import { formatProblem } from './validate.js';

export interface RunCliOptions extends OperatorFlags, PinFlags {
  input?: string;
  inputFile?: string;
  answers?: string;
  events?: string;
  model?: string[];
  trust?: string[];
  record?: string;
  maxCost?: string;
  maxTokens?: string;
  from?: string;
  at?: string;
  data?: string;
  elicitation?: string;
  attach?: string;
  token?: string;
}

const EVENT_MODES = ['pretty', 'jsonl', 'none'] as const;
const MAX_INPUT_BYTES = 8 * 1024 * 1024;

class UsageError extends Error {}

async function readBounded(file: string, limit: number, what: string): Promise<string> {
  let size: number;
  try {
    size = (await stat(file)).size;
  } catch (e) {
    throw new UsageError(
      `${what} ${file}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
    );
  }
  if (size > limit)
    throw new UsageError(`${what} ${file}: ${size} bytes is larger than the limit of ${limit}`);
  return readFile(file, 'utf8');
}

/** Points flow model entries at OpenAI-compatible endpoints: `NAME=BASEURL`. */
export function applyModelOverrides(flow: Flow, overrides: readonly string[]): Flow {
  if (overrides.length === 0) return flow;
  const models = dict(flow.models);
  for (const o of overrides) {
    const i = o.indexOf('=');
    const name = i > 0 ? o.slice(0, i) : '';
    const baseURL = i > 0 ? o.slice(i + 1) : '';
    if (!name || !/^https?:\/\/\S+$/.test(baseURL))
      throw new UsageError(`--model ${o}: expected NAME=BASEURL, e.g. default=http://127.0.0.1:11434/v1`);
    const current = ownValue(models, name);
    if (!current)
      throw new UsageError(
        `--model ${o}: the flow has no model "${name}" (it has: ${Object.keys(flow.models).join(', ')})`,
      );
    models[name] = {
      provider: 'openai',
      model: current.model ?? name,
      baseURL,
      apiKey: '${env:OPENAI_API_KEY}',
      ...(current.temperature !== undefined ? { temperature: current.temperature } : {}),
      ...(current.maxTokens !== undefined ? { maxTokens: current.maxTokens } : {}),
      ...(current.timeoutMs !== undefined ? { timeoutMs: current.timeoutMs } : {}),
      ...(current.maxRetries !== undefined ? { maxRetries: current.maxRetries } : {}),
    };
  }
  return { ...flow, models };
}

function parseAnswers(text: string, file: string): Record<string, string | string[]> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new UsageError(`--answers ${file}: not valid JSON`);
  }
  if (!v || typeof v !== 'object' || Array.isArray(v))
    throw new UsageError(
      `--answers ${file}: expected an object { "<human node id>": "answer" | ["answer", …] }`,
    );
  for (const [k, a] of Object.entries(v)) {
    const ok = typeof a === 'string' || (Array.isArray(a) && a.every((x) => typeof x === 'string'));
    if (!ok) throw new UsageError(`--answers ${file}: /${k} must be a string or a list of strings`);
  }
  return v as Record<string, string | string[]>;
}

/** Progress lines on stderr: which node is active, streamed text, tools, handovers. */
function prettyPrinter(ctx: CliContext): (e: RunEvent) => void {
  let streaming = false;
  const line = (s: string) => {
    if (streaming) {
      ctx.err('\n');
      streaming = false;
    }
    ctx.err(`${s}\n`);
  };
  return (e) => {
    switch (e.type) {
      case 'run.started':
        if (!e.parentRunId) line(`▶ run ${e.runId}${e.scripted ? ' (scripted models)' : ''}`);
        break;
      case 'node.started':
        line(`${e.parentRunId ? '  ↳ ' : ''}● ${e.nodeId}`);
        break;
      case 'model.delta':
        if (ctx.isTTY) {
          ctx.err(e.text);
          streaming = true;
        }
        break;
      case 'model.completed':
        // Text that was streamed is already on screen; otherwise it is printed whole.
        if (streaming) line('');
        else if (e.text) line(`  ${e.nodeId}: ${e.text.length > 300 ? `${e.text.slice(0, 300)}…` : e.text}`);
        break;
      case 'tool.called':
        line(`  ⚒ ${e.tool}(${JSON.stringify(e.args).slice(0, 200)})`);
        break;
      case 'tool.denied':
        line(`  ✖ ${e.tool} denied: ${e.reason}`);
        break;
      case 'node.pinned':
        line(`  📌 pinned: output of run ${e.fromRun}, turn ${e.fromTurn}${e.stale ? ' (stale)' : ''}`);
        break;
      case 'handover':
        line(`  → ${e.to} (${e.edgeId})`);
        break;
      case 'decision':
        line(`  ◇ ${Array.isArray(e.choice) ? e.choice.join(', ') : e.choice}: ${e.reason}`);
        break;
      case 'observer.fired':
        line(`  ◉ ${e.observer}: ${e.action}`);
        break;
      case 'input.requested':
        line(`  ? ${e.question}${e.options ? ` [${e.options.join('/')}]` : ''}`);
        break;
      case 'budget.exceeded':
        line(
          `  ! ${e.budget} budget${e.scope ? ` of ${e.scope} ${e.nodeId}` : ''} exceeded (${e.used} > ${e.limit})`,
        );
        break;
      case 'budget.warning':
        line(
          `  ! ${e.budget} budget${e.scope ? ` of ${e.scope} ${e.nodeId}` : ''} at ${e.used} of ${e.limit}`,
        );
        break;
      case 'model.retry':
        line(`  ↻ ${e.nodeId}: retry ${e.attempt} in ${e.delayMs} ms (${e.cause})`);
        break;
      case 'run.failed':
        line(`✖ failed: ${e.error.code}: ${e.error.message}`);
        break;
      case 'run.cancelled':
        line(`✖ cancelled${e.reason ? `: ${e.reason}` : ''}`);
        break;
      case 'run.completed':
        if (!e.parentRunId) line('✔ completed');
        break;
    }
  };
}

/** `--max-cost USD` and `--max-tokens N`: run budgets over the flow's own. */
function budgetFlags(opts: RunCliOptions): { maxCost?: number; maxTokens?: number } | undefined {
  const out: { maxCost?: number; maxTokens?: number } = {};
  if (opts.maxCost !== undefined) {
    const v = Number(opts.maxCost);
    if (!(Number.isFinite(v) && v > 0))
      throw new UsageError(`--max-cost ${opts.maxCost}: expected an amount in USD > 0`);
    out.maxCost = v;
  }
  if (opts.maxTokens !== undefined) {
    const v = Number(opts.maxTokens);
    if (!(Number.isInteger(v) && v > 0))
      throw new UsageError(`--max-tokens ${opts.maxTokens}: expected a whole number > 0`);
    out.maxTokens = v;
  }
  return out.maxCost === undefined && out.maxTokens === undefined ? undefined : out;
}

async function runCommand(file: string, opts: RunCliOptions, ctx: CliContext): Promise<number> {
  const mode = (opts.events ?? 'pretty') as (typeof EVENT_MODES)[number];
  if (!EVENT_MODES.includes(mode)) throw new UsageError(`--events must be one of ${EVENT_MODES.join(', ')}`);
  if (opts.input !== undefined && opts.inputFile !== undefined)
    throw new UsageError('give one of --input TEXT or --input-file FILE, not both');
  // A fork runs on the past run's input unless given another.
  if (opts.input === undefined && opts.inputFile === undefined && opts.from === undefined)
    throw new UsageError('give exactly one of --input TEXT or --input-file FILE');
  if ((opts.from === undefined) !== (opts.at === undefined))
    throw new UsageError('--from RUN_ID and --at NODE[:TURN] go together');
  const { validateText } = await import('@switchboard/nodes');
  const { DEFAULT_LIMITS } = (await import('@switchboard/schemas')) as { DEFAULT_LIMITS: typeof Limits };
  const text = await readBounded(file, DEFAULT_LIMITS.maxBytes, 'flow');
  const v = validateText(text);
  if (v.flow) {
    const { checkScriptFiles } = await import('../../models/script-file.js');
    v.errors.push(...(await checkScriptFiles(v.flow, dirname(resolve(file)))));
  }
  if (v.errors.length > 0 || !v.flow) {
    for (const p of v.errors) ctx.err(`${formatProblem(file, p, 'error')}\n`);
    return EXIT.usage;
  }
  const flow = applyModelOverrides(v.flow, opts.model ?? []);
  let input: unknown =
    opts.input ??
    (opts.inputFile !== undefined
      ? await readBounded(opts.inputFile, MAX_INPUT_BYTES, '--input-file')
      : undefined);
  const answers = opts.answers
    ? parseAnswers(await readBounded(opts.answers, MAX_INPUT_BYTES, '--answers'), opts.answers)
    : undefined;
  const baseDir = dirname(resolve(file));
  const interactive = ctx.isTTY && (ctx.stdin as { isTTY?: boolean } | undefined)?.isTTY === true;

  // Attached, a human node waits for its answer from an editor.
  const options: RunOptions = { baseDir, humanInput: interactive || opts.attach ? 'wait' : 'fail' };
  let policy: Awaited<ReturnType<typeof operatorPolicyOf>>;
  try {
    policy = await operatorPolicyOf(opts);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  // An endpoint named on the command line is the operator's choice, loopback included, and so
  // is sending OPENAI_API_KEY there.
  for (const m of opts.model ?? []) {
    const url = new URL(m.slice(m.indexOf('=') + 1));
    policy.secrets = policy.secrets.with('OPENAI_API_KEY', [
      url.port ? `${url.hostname}:${url.port}` : url.hostname,
    ]);
  }
  const budgets = budgetFlags(opts);
  if (budgets) options.budgets = { ...flow.budgets, ...budgets };
  if ((opts.model ?? []).length > 0) options.allowLocalModels = true;
  options.outbound = policy.outbound;
  options.secrets = policy.secrets;
  if (answers) options.answers = answers;
  if (opts.elicitation !== undefined) {
    if (opts.elicitation !== 'decline' && opts.elicitation !== 'accept-defaults')
      throw new UsageError(
        `--elicitation must be decline or accept-defaults, not ${JSON.stringify(opts.elicitation).slice(0, 60)}`,
      );
    options.elicitation = opts.elicitation;
  }
  const usesTools =
    flow.nodes.some((n) => n.kind === 'tool') || flow.nodes.some((n) => n.config.backend !== undefined);
  let shutdown: (() => Promise<void>) | undefined;
  if (usesTools) {
    const { ensureConsent } = await import('../../mcp/consent.js');
    const consent = await ensureConsent(flow, { interactive, trustArgs: opts.trust ?? [], flowFile: file });
    if (!consent.ok) {
      ctx.err(`${consent.message ?? 'commands need consent'}\n`);
      return EXIT.usage;
    }
    const { createMcpToolHost } = await import('../../tools/mcp-host.js');
    const pool = await import('../../mcp/pool.js');
    options.tools = createMcpToolHost(flow, {
      baseDir,
      flowRef: file,
      outboundPolicy: policy.outbound,
      secrets: policy.secrets,
    });
    shutdown = pool.shutdownMcpPool;
  }

  let recorder: import('../../cassette/record.js').CassetteRecorder | undefined;
  const recorded: RunEvent[] = [];
  if (opts.record) {
    const { CassetteRecorder } = await import('../../cassette/record.js');
    recorder = new CassetteRecorder();
    options.models = recorder.wrapModels();
    if (options.tools) options.tools = recorder.wrapTools(options.tools);
  }

  let forker: import('../../cassette/fork.js').Forker | undefined;
  if (opts.from !== undefined) {
    const { applyFork, ForkFlagError } = await import('../fork-run.js');
    try {
      const f = await applyFork(opts, flow, options);
      forker = f.forker;
      input ??= f.input;
    } catch (e) {
      if (e instanceof ForkFlagError) throw new UsageError(e.message);
      throw e;
    }
  }

  const { applyPinFlags, PinFlagError } = await import('../pin-flags.js');
  try {
    await applyPinFlags(opts, file, flow, options, (l) => ctx.err(`${l}\n`));
  } catch (e) {
    if (e instanceof PinFlagError) throw new UsageError(e.message);
    throw e;
  }

  let attach: import('../attach-run.js').AttachedCli | undefined;
  if (opts.attach !== undefined) {
    const { startAttach } = await import('../attach-run.js');
    try {
      const token = opts.token ?? (process.env.SWITCHBOARD_TOKEN || undefined);
      attach = startAttach({ url: opts.attach, ...(token ? { token } : {}), flow, input }, ctx);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
    options.runId = attach.localRunId;
  }

  const { runFlow } = await import('../../engine/index.js');
  const pretty = mode === 'pretty' ? prettyPrinter(ctx) : undefined;
  let rl: ReturnType<typeof createInterface> | undefined;
  let pendingQuestion = false;
  const handle = runFlow(flow, input, {
    ...options,
    onEvent: (e) => {
      attach?.push(e);
      if (recorder) recorded.push(e);
      if (mode === 'jsonl') ctx.out(`${JSON.stringify(e)}\n`);
      else pretty?.(e);
      if (e.type === 'input.requested' && interactive && !e.parentRunId) {
        // A person is at the terminal: the next line on stdin answers the question.
        pendingQuestion = true;
        rl ??= createInterface({ input: ctx.stdin!, terminal: false });
        ctx.err(`  ${e.nodeId} > `);
        rl.once('line', (answer) => {
          pendingQuestion = false;
          handle.send({ type: 'answer', nodeId: e.nodeId!, answer });
        });
      }
    },
  });
  attach?.bind((cmd) => handle.send(cmd));
  const onSigint = () => handle.send({ type: 'cancel', reason: 'interrupted (SIGINT)' });
  process.once('SIGINT', onSigint);
  let result: Awaited<typeof handle.result>;
  try {
    result = await handle.result;
  } finally {
    process.removeListener('SIGINT', onSigint);
    rl?.close();
    void pendingQuestion;
    await shutdown?.().catch(() => {});
    await attach?.finish();
  }
  if (forker?.miss) {
    ctx.err(
      `switchboard run: the flow differs from run ${opts.from} before the fork point: ${forker.miss.message}\n`,
    );
    return EXIT.failed;
  }
  if (recorder && opts.record) {
    const { writeCassette } = await import('../../cassette/file.js');
    // The flow as written (before --model overrides), so the cassette replays without the endpoint.
    const cassette = recorder.cassette(v.flow, input, recorded, result);
    if (flow !== v.flow) {
      // The models as run (the --model overrides), which the run's model.request events describe.
      const asRun = dict<ModelConfigT>();
      for (const [name, config] of Object.entries(flow.models))
        if (config !== v.flow.models[name]) asRun[name] = config;
      cassette.modelsAsRun = asRun;
    }
    await writeCassette(opts.record, cassette);
    ctx.err(
      `recorded ${recorder.models.length} model and ${recorder.tools.length} tool call(s) to ${opts.record}\n`,
    );
  }
  if (result.status === 'completed') {
    if (mode !== 'jsonl') {
      const out = result.output;
      ctx.out(`${typeof out === 'string' ? out : JSON.stringify(out, null, 2)}\n`);
    }
    return EXIT.ok;
  }
  if (mode === 'none')
    ctx.err(
      `switchboard run: ${result.status}${result.error ? `: ${result.error.code}: ${result.error.message}` : ''}\n`,
    );
  if (result.error?.code === 'human_input_required') return EXIT.needsHuman;
  if (result.error?.code === 'flow_invalid') return EXIT.usage;
  return EXIT.failed;
}

export function registerRun(program: Command, ctx: CliContext): void {
  const collect = (v: string, prev: string[] = []) => [...prev, v];
  const cmd = program
    .command('run')
    .description('Run a flow headless: progress on stderr, the final answer on stdout.')
    .argument('<flow>', 'flow JSON file')
    .option('--input <text>', 'the run input')
    .option('--input-file <file>', 'read the run input from a file')
    .option(
      '--answers <file>',
      'JSON answers for human nodes: { "<node id>": "answer" | ["first", "second"] }',
    )
    .option('--events <mode>', 'pretty (progress on stderr), jsonl (every event on stdout), none', 'pretty')
    .option(
      '--model <name=baseurl>',
      "point the flow's model NAME at an OpenAI-compatible endpoint (key: OPENAI_API_KEY)",
      collect,
    )
    .option('--trust <name>', 'approve a stdio command by its mcpServers key or fingerprint', collect)
    .option(
      '--max-cost <usd>',
      "stop the run once its models' cost (priced by each model's `pricing`) exceeds this",
    )
    .option('--max-tokens <n>', 'stop the run once it has used more tokens than this')
    .option(
      '--elicitation <policy>',
      'what an MCP server asking through elicitation gets: decline (default) or accept-defaults',
    )
    .option('--record <file>', 'write a cassette: every model request and reply, every tool call and result')
    .option('--from <run-id>', 'fork a stored run: its recorded state up to --at, live from there')
    .option('--at <node[:turn]>', 'with --from: the node (and its turn, from 1) where the fork goes live')
    .option('--data <dir>', 'with --from or --pin: the data directory the run is stored in')
    .option(
      '--attach <url>',
      'stream the run to a `switchboard serve` server (its editors watch and command it); the run stays local',
    )
    .option('--token <token>', 'with --attach: the server token (default SWITCHBOARD_TOKEN)');
  addOperatorFlags(addPinFlags(cmd)).action(async (file: string, opts: RunCliOptions) => {
    try {
      ctx.setExit(await runCommand(file, opts, ctx));
    } catch (e) {
      if (e instanceof UsageError) {
        ctx.err(`switchboard run: ${e.message}\n`);
        ctx.setExit(EXIT.usage);
        return;
      }
      ctx.err(`switchboard run: ${(e as Error).message}\n`);
      ctx.setExit(EXIT.failed);
    }
  });
}
