/**
 * `switchboard test --record-case FILE RUN_ID`: a case built from a stored run — its input, the
 * model replies it got (from its `model.completed` events and the tool calls that followed
 * them), its human answers, and assertions on the path it took and its final output.
 */
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve } from 'node:path';
import type { FlowTestCaseT, FlowTests, RunEvent } from '@switchboard/schemas';
import type { StoredRun } from '../cli/stored-run.js';
import { edgesTaken } from './assert.js';

interface ReplyEntry {
  node: string;
  text: string;
  usage?: { promptTokens: number; completionTokens: number };
  toolCalls?: Array<{ id: string; name: string; args: unknown }>;
}

/** The replies of a run, per call, in order: text and usage from `model.completed`, tool calls from the `tool.called` events after it. */
export function repliesOf(events: readonly RunEvent[]): ReplyEntry[] {
  const out: ReplyEntry[] = [];
  // The last reply of each (run, node): tool calls that follow belong to it.
  const last = new Map<string, ReplyEntry>();
  for (const e of events) {
    const key = `${e.runId}\u0000${e.nodeId ?? ''}`;
    if (e.type === 'model.completed') {
      const r: ReplyEntry = { node: e.nodeId ?? '', text: e.text };
      if (e.usage) r.usage = e.usage;
      out.push(r);
      last.set(key, r);
    } else if (e.type === 'tool.called' || e.type === 'tool.denied') {
      const r = last.get(key);
      if (!r) continue;
      const args = e.type === 'tool.called' ? e.args : {};
      r.toolCalls ??= [];
      r.toolCalls.push({ id: e.callId, name: e.tool, args });
    }
  }
  return out;
}

export function caseFromRun(run: StoredRun, name: string): FlowTestCaseT {
  const { spec, events } = run;
  const answers = new Map<string, string[]>();
  for (const e of events)
    if (e.type === 'input.received' && e.nodeId && !e.parentRunId) {
      const list = answers.get(e.nodeId) ?? [];
      list.push(e.answer);
      answers.set(e.nodeId, list);
    }
  const end = events.findLast((e) => !e.parentRunId && e.type.startsWith('run.') && e.type !== 'run.started');
  const c: FlowTestCaseT = { name, input: spec.input, replies: repliesOf(events), expect: {} };
  if (answers.size > 0)
    c.answers = Object.fromEntries([...answers].map(([k, v]) => [k, v.length === 1 ? v[0]! : v]));
  c.expect.edges = { order: edgesTaken(events) };
  if (end?.type === 'run.completed') {
    c.expect.status = 'completed';
    c.expect.output = { equals: end.output };
  } else if (end?.type === 'run.failed') {
    c.expect.status = 'failed';
    c.expect.error = end.error.code;
  } else if (end?.type === 'run.cancelled') c.expect.status = 'cancelled';
  return c;
}

/** Appends a case recorded from `run` to `file` (created when missing, next to the run's flow file). */
export async function recordCase(file: string, run: StoredRun): Promise<{ created: boolean; name: string }> {
  const abs = resolve(file);
  let doc: FlowTests;
  let created = false;
  if (existsSync(abs)) {
    doc = JSON.parse(await readFile(abs, 'utf8')) as FlowTests;
    if (!Array.isArray(doc.cases)) throw new Error(`${file}: /cases is not an array`);
    const flowFile = resolve(dirname(abs), String(doc.flow));
    const flow = JSON.parse(await readFile(flowFile, 'utf8')) as { id?: unknown };
    if (flow.id !== run.spec.flow.id)
      throw new Error(
        `${file} tests flow "${String(flow.id)}" (${flowFile}), but run ${run.spec.runId} ran flow "${run.spec.flow.id}"`,
      );
  } else {
    if (!abs.endsWith('.tests.json')) throw new Error(`${file}: a new tests file is named FLOW.tests.json`);
    const flowFile = join(dirname(abs), `${basename(abs, '.tests.json')}.json`);
    if (!existsSync(flowFile))
      throw new Error(`${file}: no flow file ${relative(process.cwd(), flowFile)} next to it to test`);
    doc = {
      $schema: 'https://switchboard.dev/schemas/flow-tests.schema.json',
      version: 1,
      flow: basename(flowFile),
      cases: [],
    };
    created = true;
  }
  const names = new Set(doc.cases.map((c) => c.name));
  let name = `recorded from ${run.spec.runId}`;
  for (let i = 2; names.has(name); i++) name = `recorded from ${run.spec.runId} (${i})`;
  doc.cases.push(caseFromRun(run, name));
  await writeFile(abs, `${JSON.stringify(doc, null, 2)}\n`);
  return { created, name };
}
