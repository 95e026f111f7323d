import { describe, expect, it } from 'vitest';
import { newRunData, restoreRunData } from './state.js';

describe('run data tables keyed by node ids, model names and state keys', () => {
  it('are null-prototype when new and when restored from a checkpoint', () => {
    const fresh = newRunData('go');
    for (const t of [fresh.inbox, fresh.threads, fresh.state, fresh.counters.byNode, fresh.counters.byModel])
      expect(Object.getPrototypeOf(t)).toBeNull();
    // A checkpoint is JSON: parsed back, its tables have Object.prototype again, until restored.
    const parsed = JSON.parse(
      '{"input":"go","task":"go","transcript":[],"msgSeq":0,"inbox":{},"inboxOrder":0,"threads":{},' +
        '"floors":{},"summaries":{},"memo":{"__proto__":{"x":1}},"state":{"__proto__":{"polluted":1}},' +
        '"counters":{"turns":0,"steps":0,"tokens":0,"promptTokens":0,"completionTokens":0,"failures":{},' +
        '"byNode":{},"byModel":{"__proto__":{"turns":1,"promptTokens":0,"completionTokens":0}}},' +
        '"answerPos":{},"recent":{}}',
    );
    const d = restoreRunData(parsed);
    for (const t of [d.inbox, d.threads, d.floors, d.summaries, d.memo, d.state, d.answerPos, d.recent])
      expect(Object.getPrototypeOf(t)).toBeNull();
    for (const t of [d.counters.byNode, d.counters.byModel, d.counters.failures])
      expect(Object.getPrototypeOf(t)).toBeNull();
    const own = <T>(o: Record<string, T>, k: string) => Object.getOwnPropertyDescriptor(o, k)?.value as T;
    expect(Object.getPrototypeOf(own(d.memo, '__proto__'))).toBeNull();
    // The keys the checkpoint held stay keys, and a new one is an ordinary write.
    expect(own(d.counters.byModel, '__proto__')).toEqual({ turns: 1, promptTokens: 0, completionTokens: 0 });
    const key: string = '__proto__';
    d.counters.byNode[key] = { turns: 1, promptTokens: 0, completionTokens: 0 };
    const ctor: string = 'constructor';
    d.inbox[ctor] = [];
    expect(Object.keys(d.counters.byNode)).toEqual(['__proto__']);
    expect(({} as { turns?: unknown }).turns).toBeUndefined();
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
  });
});
