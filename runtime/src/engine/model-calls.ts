/**
 * Model calls of a run: the providers of the flow's models (restored from a checkpoint), the
 * `model.request` event of every call (request-log.ts), `model.delta` / `model.retry` /
 * `model.completed`, and the reply's tokens counted against the run's limits.
 */
import type { ModelCall, ModelReply } from '@switchboard/nodes/core';
import { dict, ownValue } from '@switchboard/schemas/core';
import { defaultModelFactory } from '../models/factory.js';
import type { ModelFactoryContext, ModelProvider, ModelRequest } from '../models/types.js';
import type { RunCore } from './context.js';
import type { Control } from './control.js';
import { RunFailure } from './errors.js';
import type { NodeCtx } from './node-ctx.js';
import { flowSecrets, RequestRecorder } from './request-log.js';
import type { RunLimits } from './run-limits.js';

export class ModelCalls {
  private readonly providers = new Map<string, ModelProvider>();
  /** Writes the `model.request` events; made on the run's first model call. */
  private recorder: RequestRecorder | undefined;

  constructor(
    private readonly run: RunCore,
    private readonly control: Control,
    private readonly limits: RunLimits,
    /** Provider snapshots of the checkpoint the run resumes from. */
    restored: Readonly<Record<string, unknown>> | undefined,
  ) {
    const { flow, options } = run;
    let fctx: ModelFactoryContext | undefined;
    for (const name of Object.keys(flow.models)) {
      const config = flow.models[name]!;
      const given = options.models;
      let p: ModelProvider | undefined;
      if (given && typeof given !== 'function') p = ownValue(given, name);
      else {
        fctx ??= this.factoryCtx();
        p = given ? given(name, config, fctx) : defaultModelFactory(name, config, fctx);
      }
      if (!p) continue;
      if (p.scripted) run.events.scripted = true;
      const snap = ownValue(restored, name);
      const restorable = p as unknown as { restore?: (s: unknown) => void };
      if (snap !== undefined && typeof restorable.restore === 'function') restorable.restore(snap);
      this.providers.set(name, p);
    }
  }

  private factoryCtx() {
    const options = this.run.options;
    const env = options.env ?? (typeof process !== 'undefined' ? process.env : {});
    const ctx: ModelFactoryContext = {
      resolveEnv: (v) => {
        if (v === undefined) return undefined;
        const m = /^\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(v);
        return m ? ownValue(env, m[1]!) : v;
      },
    };
    if (options.baseDir !== undefined) ctx.baseDir = options.baseDir;
    if (options.allowLocalModels) ctx.allowLocalEndpoints = true;
    if (options.outbound) ctx.outbound = options.outbound;
    if (options.secrets) ctx.secrets = options.secrets;
    return ctx;
  }

  /** What the providers that can be snapshotted hold, for a checkpoint. */
  snapshots(): Record<string, unknown> {
    const providers = dict<unknown>();
    for (const [name, p] of this.providers) {
      const s = p as unknown as { snapshot?: () => unknown };
      if (typeof s.snapshot === 'function') providers[name] = s.snapshot();
    }
    return providers;
  }

  provider(name: string, nodeId: string): ModelProvider {
    const p = this.providers.get(name);
    if (!p)
      throw new RunFailure(
        'unknown_model',
        `node "${nodeId}" uses model "${name}", which is not in the flow's models`,
      );
    return p;
  }

  /** A model call; `then`, when given, runs in the reaction that accounts for the reply (ModelPort.completeThen). */
  call<T = ModelReply>(
    nc: NodeCtx,
    name: string,
    call: ModelCall,
    then?: (reply: ModelReply) => T | PromiseLike<T>,
  ): Promise<T> {
    try {
      const g = this.control.gate(nc.cx);
      if (g) return g.then(() => this.request(nc, name, call, then));
      return this.request(nc, name, call, then);
    } catch (e) {
      return Promise.reject(this.run.stop ?? e);
    }
  }

  /** A rejected model call fails with the run's stop when there is one (cancelled, over budget). */
  private readonly rethrowStop = (e: unknown): never => {
    throw this.run.stop ?? e;
  };

  /**
   * Not an async function: a model call is made on every agent step, and an async frame (its
   * register file, promise and await closures) costs more than one reaction on the provider's promise.
   */
  private request<T>(
    nc: NodeCtx,
    name: string,
    call: ModelCall,
    then: ((reply: ModelReply) => T | PromiseLike<T>) | undefined,
  ): Promise<T> {
    const cx = nc.cx;
    const events = this.run.events;
    const provider = this.provider(name, nc.node.id);
    const nodeId = nc.node.id;
    this.record(nc, name, call);
    const req: ModelRequest = { nodeId, messages: call.messages, signal: this.run.signal };
    if (call.tools) req.tools = call.tools;
    if (call.jsonSchema) req.jsonSchema = call.jsonSchema;
    if (call.maxTokens !== undefined) req.maxTokens = call.maxTokens;
    req.onDelta = (text) => events.emit(cx, { type: 'model.delta', nodeId, text });
    // A provider that asks again with corrections appended sends other messages: a request of its own.
    const sent = call.messages.length;
    req.onCorrection = (c) => {
      const messages = call.messages.slice(0, sent);
      for (const content of c) messages.push({ role: 'user', content });
      this.record(nc, name, { ...call, messages });
    };
    req.onRetry = (i) =>
      events.emit(cx, {
        type: 'model.retry',
        nodeId,
        attempt: i.attempt,
        delayMs: i.delayMs,
        cause: i.cause,
      });
    const done = provider.complete(req);
    if (then === undefined) return done.then((res) => this.replied(nc, res, name) as T, this.rethrowStop);
    return done.then((res) => then(this.replied(nc, res, name)), this.rethrowStop);
  }

  /** The `model.request` event of a call about to be made: what is sent, secrets redacted. */
  private record(nc: NodeCtx, name: string, call: ModelCall): void {
    const run = this.run;
    if (run.events.ended) return;
    if (this.recorder === undefined) {
      const env = run.options.env ?? (typeof process !== 'undefined' ? process.env : {});
      this.recorder = new RequestRecorder(run.flow.models, flowSecrets(run.flow, env));
    }
    const nodeId = nc.node.id;
    const ctx = { nodeId, turn: nc.turn, attempt: nc.attempt, call: ++nc.calls, model: name };
    const e = this.recorder.build(ctx, call);
    run.events.emit(nc.cx, e);
    if (typeof e.seq === 'number') this.recorder.sent(nodeId, e.seq, call.messages);
  }

  private replied(nc: NodeCtx, res: ModelReply, modelKey?: string): ModelReply {
    if (this.run.stop) throw this.run.stop;
    this.limits.countTokens(nc, res);
    this.run.events.modelCompleted(nc.cx, nc.node.id, res);
    this.limits.checkTokens(nc, res.usage, modelKey);
    return res;
  }
}
