import { describe, expect, it } from 'vitest';
import { watchAccess } from './accessWatch.js';
import type { ServerAccess } from './api.js';

function connection(down = false) {
  const fns = new Set<() => void>();
  return {
    isDown: down,
    subscribe(fn: () => void) {
      fns.add(fn);
      return () => fns.delete(fn);
    },
    down() {
      return this.isDown;
    },
    set(d: boolean) {
      this.isDown = d;
      for (const f of fns) f();
    },
  };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

describe('watchAccess', () => {
  it('asks the server once per drop, and gives up the connections only when the token is refused', async () => {
    const a = connection();
    const b = connection();
    const answers: ServerAccess[] = ['absent', 'ok', 'unauthorized'];
    let checks = 0;
    const refused: string[] = [];
    watchAccess({
      connections: [a, b],
      check: async () => {
        checks++;
        return answers.shift()!;
      },
      onRefused: (why) => refused.push(why),
    });
    a.set(false); // no change: no check
    a.set(true); // drop: the server is away
    await tick();
    a.set(true); // still down: no new check
    b.set(true); // another drop: the token is fine
    await tick();
    expect([checks, refused]).toEqual([2, []]);
    a.set(false);
    a.set(true); // a retry failed again: now the token is refused
    await tick();
    expect([checks, refused]).toEqual([3, ['unauthorized']]);
    b.set(false);
    b.set(true);
    await tick();
    expect(checks).toBe(3);
  });
});
