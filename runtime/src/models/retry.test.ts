import { describe, expect, it } from 'vitest';
import {
  AttemptError,
  backoffDelay,
  DEFAULT_RETRY_POLICY,
  parseRetryAfter,
  type RetryPolicy,
  withAnswerRetry,
  withTransportRetry,
} from './retry.js';
import { ModelError } from './types.js';

const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, baseDelayMs: 1, maxDelayMs: 4, maxRetries: 2 };
const base = () => ({
  policy,
  signal: new AbortController().signal,
  classify: () => ({ code: 'network' as const, retryable: true, message: 'boom' }),
  counter: { attempts: 0 },
  label: 'model "m"',
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  it.each([
    [{ 'retry-after': '0.5' }, 500],
    [{ 'retry-after': '2' }, 2_000],
    [{ 'retry-after': '120' }, 120_000],
    [{ 'retry-after': 'Thu, 01 Jan 2026 00:00:03 GMT' }, 3_000],
    [{ 'retry-after': 'Wed, 31 Dec 2025 23:59:00 GMT' }, 0],
    [{ 'retry-after-ms': '150', 'retry-after': '9' }, 150],
    [{ 'retry-after': 'soon' }, undefined],
    [{}, undefined],
  ])('%j → %s ms', (headers, expected) => {
    expect(parseRetryAfter(headers, now)).toBe(expected);
    expect(parseRetryAfter(new Headers(headers as Record<string, string>), now)).toBe(expected);
  });
});

describe('backoffDelay', () => {
  it('grows exponentially with jitter and stays under the cap', () => {
    const p = { ...DEFAULT_RETRY_POLICY, baseDelayMs: 100, maxDelayMs: 1_000 };
    expect(backoffDelay(1, { ...p, random: () => 0 })).toBe(50);
    expect(backoffDelay(1, { ...p, random: () => 0.999 })).toBeLessThanOrEqual(100);
    expect(backoffDelay(3, { ...p, random: () => 0 })).toBe(200);
    expect(backoffDelay(10, { ...p, random: () => 0.999 })).toBeLessThanOrEqual(1_000);
  });
});

describe('withTransportRetry', () => {
  it('retries a retryable failure up to the budget, counting attempts', async () => {
    const o = base();
    const err = await withTransportRetry(async () => {
      throw new Error('x');
    }, o).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect(err).toMatchObject({ code: 'network', attempts: 3, causeText: 'boom' });
  });

  it('does not retry what cannot succeed, nor an attempt that already showed output', async () => {
    const o = base();
    await expect(
      withTransportRetry(async () => {
        throw new AttemptError({ code: 'auth', retryable: false, message: 'HTTP 401' });
      }, o),
    ).rejects.toMatchObject({ code: 'auth', attempts: 1 });
    const o2 = base();
    await expect(
      withTransportRetry(async () => {
        throw new AttemptError({ code: 'network', retryable: true, message: 'reset', outputStarted: true });
      }, o2),
    ).rejects.toMatchObject({ code: 'stream_interrupted', attempts: 1 });
  });

  it('fails fast when Retry-After exceeds the cap', async () => {
    const o = { ...base(), policy: { ...policy, maxRetryAfterMs: 1_000 } };
    const started = Date.now();
    await expect(
      withTransportRetry(async () => {
        throw new AttemptError({
          code: 'rate_limited',
          retryable: true,
          message: '429',
          retryAfterMs: 60_000,
        });
      }, o),
    ).rejects.toMatchObject({ code: 'rate_limited', attempts: 1 });
    expect(Date.now() - started).toBeLessThan(500);
  });
});

describe('withAnswerRetry', () => {
  it('re-asks with corrective messages, then gives up with a typed error', async () => {
    const seen: string[][] = [];
    const o = {
      maxAnswerRetries: 2,
      check: (a: string) =>
        a === 'good' ? { ok: true as const } : { ok: false as const, corrective: `fix ${a}`, cause: a },
      signal: new AbortController().signal,
      counter: { attempts: 0 },
      label: 'm',
    };
    const answers = ['bad1', 'good'];
    const ask = async (c: string[]) => {
      seen.push([...c]);
      return answers.shift()!;
    };
    expect(await withAnswerRetry(ask, o)).toBe('good');
    expect(seen).toEqual([[], ['fix bad1']]);
    await expect(withAnswerRetry(async () => 'bad', o)).rejects.toMatchObject({ code: 'bad_response' });
  });
});
