/**
 * The Lua scripts that write a run's state. Each write from a worker is fenced by the BullMQ
 * job lock: it happens only if the lock still holds the worker's token, in the same atomic
 * step, so a worker that lost its run (stalled, then taken over) can write nothing more —
 * two workers can never both append to one run.
 */
import type { Redis } from 'ioredis';

/** Error prefix of a fenced write by a worker that no longer holds the run. */
export const LOST_LOCK = 'LOSTLOCK';
export const SEQ_GAP = 'SEQGAP';

const FENCE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return redis.error_reply('${LOST_LOCK} run ' .. ARGV[2] .. ' is held by another worker')
end`;

const LAST_SEQ = `
local function lastSeq(key)
  local last = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)
  if #last == 0 then return 0, nil end
  return tonumber(string.match(last[1][1], '^(%d+)')), last[1][2][2]
end`;

/**
 * KEYS: lock, events, [checkpoint]. ARGV: token, runId, channel, checkpoint JSON or '', then
 * seq/event pairs. Appends the events (the first must follow the stream's last), then the
 * checkpoint, and tells the servers.
 */
const APPEND = `${FENCE}
${LAST_SEQ}
local n = lastSeq(KEYS[2])
if #ARGV > 4 then
  for i = 5, #ARGV, 2 do
    local seq = tonumber(ARGV[i])
    local want = n + (i - 3) / 2
    if seq ~= want then
      return redis.error_reply('${SEQ_GAP} run ' .. ARGV[2] .. ': seq ' .. seq .. ' where ' .. want .. ' comes next')
    end
  end
  for i = 5, #ARGV, 2 do
    redis.call('XADD', KEYS[2], ARGV[i] .. '-0', 'e', ARGV[i + 1])
    n = n + 1
  end
  redis.call('PUBLISH', ARGV[3], ARGV[2])
end
if ARGV[4] ~= '' then redis.call('SET', KEYS[3], ARGV[4]) end
return n`;

/** KEYS: lock, journal. ARGV: token, runId, entry JSON. */
const JOURNAL = `${FENCE}
return redis.call('RPUSH', KEYS[2], ARGV[3])`;

/**
 * KEYS: events. ARGV: runId, channel, event JSON without seq. Appends a final event unless the
 * run already ended (any worker may do it, once: for a run no worker can finish).
 */
const FINISH = `${LAST_SEQ}
local n, last = lastSeq(KEYS[1])
if last then
  local t = cjson.decode(last)['type']
  if t == 'run.completed' or t == 'run.failed' or t == 'run.cancelled' or t == 'run.interrupted' then
    return 0
  end
end
local ev = cjson.decode(ARGV[3])
ev['seq'] = n + 1
redis.call('XADD', KEYS[1], (n + 1) .. '-0', 'e', cjson.encode(ev))
redis.call('PUBLISH', ARGV[2], ARGV[1])
return n + 1`;

/**
 * KEYS: events, commands. ARGV: runId, channel, command JSON. Adds the command to the run's
 * stream and tells the workers, unless the run's own final event is already in its events:
 * then nothing is added (the worker would never read it) and the final event's type is returned.
 */
export const SEND_COMMAND = `
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #last > 0 then
  local ev = cjson.decode(last[1][2][2])
  local t = ev['type']
  if ev['runId'] == ARGV[1] and (t == 'run.completed' or t == 'run.failed' or t == 'run.cancelled' or t == 'run.interrupted') then
    return t
  end
end
redis.call('XADD', KEYS[2], '*', 'c', ARGV[3])
redis.call('PUBLISH', ARGV[2], ARGV[1])
return false`;

export interface RunScripts {
  sbAppend(...args: (string | number)[]): Promise<number>;
  sbJournal(...args: string[]): Promise<number>;
  sbFinish(...args: string[]): Promise<number>;
}

/** Defines the scripts on a connection (ioredis runs them by EVALSHA, loading them once). */
export function withScripts(r: Redis): Redis & RunScripts {
  if (!(r as Partial<RunScripts>).sbAppend) {
    r.defineCommand('sbAppend', { numberOfKeys: 3, lua: APPEND });
    r.defineCommand('sbJournal', { numberOfKeys: 2, lua: JOURNAL });
    r.defineCommand('sbFinish', { numberOfKeys: 1, lua: FINISH });
  }
  return r as Redis & RunScripts;
}
