/**
 * The `shell` built-in: runs allow-listed programs (by bare name, found on PATH) with an argument
 * array — never through a shell — in a working directory confined to its root, with a timeout
 * and a cap on output. It is off unless the flow sets `options.enabled: true`, and like a stdio
 * command its whole options object must be approved by the local operator for that flow (see
 * consent.ts).
 *
 * An allow entry is a program name (`"ls"`: any arguments) or a program with the arguments every
 * call must start with (`"node --test"`: `node --test …` only, never `node -e …`). Allowing an
 * interpreter (node, python, sh, bash, perl, ruby, …) with any arguments is allowing every
 * program and any code: prefer entries with fixed leading arguments. See README.md here.
 */
import { spawn } from 'node:child_process';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { minimalEnv } from '../env.js';
import { McpHostError } from '../errors.js';
import { resolveInside } from '../safe-path.js';
import { type BuiltinContext, optNumber, SERVER_VERSION } from './context.js';
import { builtinRoot } from './filesystem.js';

/** One allow entry: a program and the arguments each call must begin with. */
export interface AllowEntry {
  program: string;
  fixedArgs: string[];
}

export interface ShellOptions {
  enabled: boolean;
  allow: AllowEntry[];
  timeoutMs: number;
  maxOutputBytes: number;
}

function parseAllow(a: string): AllowEntry {
  const words = a.trim().split(/\s+/);
  const program = words[0] ?? '';
  if (!/^[A-Za-z0-9_.+-]+$/.test(program) || program === '.' || program === '..')
    throw new McpHostError(
      'mcp.bad-config',
      `shell: allow entry ${JSON.stringify(a)} must start with a bare program name`,
    );
  return { program, fixedArgs: words.slice(1) };
}

export function shellOptions(o: Record<string, unknown>): ShellOptions {
  const raw = Array.isArray(o.allow) ? o.allow.filter((a): a is string => typeof a === 'string') : [];
  return {
    enabled: o.enabled === true,
    allow: raw.map(parseAllow),
    timeoutMs: optNumber(o, 'timeoutMs', 10_000),
    maxOutputBytes: optNumber(o, 'maxOutputBytes', 64 * 1024),
  };
}

/** Whether `command args…` is covered by an allow entry. */
export function allowedCall(allow: AllowEntry[], command: string, args: string[]): boolean {
  return allow.some((e) => e.program === command && e.fixedArgs.every((fixed, i) => args[i] === fixed));
}

const describeEntry = (e: AllowEntry) =>
  e.fixedArgs.length ? `${e.program} ${e.fixedArgs.join(' ')} …` : e.program;

export function createShellServer(ctx: BuiltinContext): McpServer {
  const opts = shellOptions(ctx.options);
  if (!opts.enabled)
    throw new McpHostError(
      'mcp.bad-config',
      'the shell built-in is off; the flow must set options.enabled: true',
    );
  const server = new McpServer({ name: 'switchboard-shell', version: SERVER_VERSION });
  let rootP: Promise<string> | undefined;
  const root = () => {
    rootP ??= builtinRoot(ctx, 'workspace');
    return rootP;
  };

  server.registerTool(
    'run_command',
    {
      description: `Run one of these programs with arguments (no shell): ${opts.allow.map(describeEntry).join(', ') || '(none)'}. Output is capped at ${opts.maxOutputBytes} bytes; time limit ${opts.timeoutMs} ms.`,
      inputSchema: {
        command: z.string().describe('A program name from the allow-list.'),
        args: z.array(z.string().max(10_000)).max(200).optional(),
        cwd: z.string().optional().describe('A directory relative to the root.'),
      },
    },
    async ({ command, args, cwd }, extra) => {
      if (!allowedCall(opts.allow, command, args ?? []))
        throw new McpHostError(
          'mcp.command-refused',
          `command ${JSON.stringify([command, ...(args ?? [])].join(' ').slice(0, 200))} is not in the allow-list (${opts.allow.map(describeEntry).join(', ') || 'empty'})`,
        );
      const dir = await resolveInside(await root(), cwd ?? '.');
      if (!dir.exists) throw new Error(`cwd ${cwd}: no such directory`);
      return await new Promise((resolve) => {
        const child = spawn(command, args ?? [], {
          cwd: dir.path,
          shell: false,
          env: { ...minimalEnv(), HOME: dir.root },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        const out: Buffer[] = [];
        const err: Buffer[] = [];
        let outLen = 0;
        let errLen = 0;
        let truncated = false;
        let timedOut = false;
        const collect = (list: Buffer[], chunk: Buffer, which: 'out' | 'err') => {
          const used = which === 'out' ? outLen : errLen;
          const room = opts.maxOutputBytes - used;
          if (room <= 0) {
            truncated = true;
            return;
          }
          const piece = chunk.length > room ? chunk.subarray(0, room) : chunk;
          if (piece !== chunk) truncated = true;
          list.push(piece);
          if (which === 'out') outLen += piece.length;
          else errLen += piece.length;
        };
        child.stdout.on('data', (c: Buffer) => collect(out, c, 'out'));
        child.stderr.on('data', (c: Buffer) => collect(err, c, 'err'));
        const kill = () => {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        };
        const timer = setTimeout(() => {
          timedOut = true;
          kill();
        }, opts.timeoutMs);
        extra.signal.addEventListener('abort', kill, { once: true });
        const finish = (code: number | null, signal: string | null, spawnError?: Error) => {
          clearTimeout(timer);
          extra.signal.removeEventListener('abort', kill);
          const stdout = Buffer.concat(out).toString('utf8');
          const stderr = Buffer.concat(err).toString('utf8');
          const status = spawnError
            ? `could not start ${command}: ${spawnError.message}`
            : timedOut
              ? `timed out after ${opts.timeoutMs} ms`
              : signal
                ? `killed by ${signal}`
                : `exit code ${code}`;
          const body = [`$ ${command} ${(args ?? []).join(' ')}`.trim(), status];
          if (stdout) body.push(`--- stdout ---\n${stdout}`);
          if (stderr) body.push(`--- stderr ---\n${stderr}`);
          if (truncated) body.push(`[output capped at ${opts.maxOutputBytes} bytes per stream]`);
          resolve({
            content: [{ type: 'text' as const, text: body.join('\n') }],
            isError: spawnError !== undefined || timedOut || code !== 0,
            structuredContent: { exitCode: code, signal, timedOut, truncated },
          });
        };
        let done = false;
        child.once('error', (e) => {
          if (!done) {
            done = true;
            finish(null, null, e);
          }
        });
        child.once('close', (code, signal) => {
          if (!done) {
            done = true;
            finish(code, signal);
          }
        });
      });
    },
  );
  return server;
}
