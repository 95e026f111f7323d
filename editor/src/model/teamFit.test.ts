import { describe, expect, it } from 'vitest';
import { fitTeam, TEAM_PAD } from './teamFit.js';

describe('teams grow around their members', () => {
  it('leaves a team that holds its members alone', () => {
    expect(
      fitTeam({ x: 0, y: 0 }, { width: 400, height: 300 }, [{ x: 20, y: 60, width: 100, height: 50 }]),
    ).toBe(undefined);
  });
  it('grows right and down without moving', () => {
    const f = fitTeam({ x: 10, y: 10 }, { width: 200, height: 100 }, [
      { x: 150, y: 80, width: 100, height: 50 },
    ])!;
    expect(f).toEqual({
      position: { x: 10, y: 10 },
      size: { width: 250 + TEAM_PAD.side, height: 130 + TEAM_PAD.side },
      shift: { x: 0, y: 0 },
    });
  });
  it('grows left and up by moving the team and shifting its members', () => {
    const f = fitTeam({ x: 100, y: 100 }, { width: 300, height: 200 }, [
      { x: -20, y: 10, width: 100, height: 50 },
    ])!;
    expect(f.shift).toEqual({ x: 20 + TEAM_PAD.side, y: TEAM_PAD.top - 10 });
    expect(f.position).toEqual({ x: 100 - f.shift.x, y: 100 - f.shift.y });
    expect(f.size).toEqual({ width: 300 + f.shift.x, height: 200 + f.shift.y });
  });
});
