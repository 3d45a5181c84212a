-- flowgate.lua: decide which claimed jobs of one flow (a topic's, or a
-- flow key's) may start now (Store.Gate). Every kairos process asks it
-- before firing, so the limits hold across processes.
-- KEYS[1] the flow's pace (STRING: when its next delivery may go, ms),
-- KEYS[2] its reservations (ZSET: job attempt -> its reserved time, ms),
-- KEYS[3] its permits (ZSET: job attempt -> when the permit lapses, ms),
-- KEYS[4] its circuit breaker (HASH, breaker.lua), KEYS[5] the times
-- taken from its calendar (ZSET, see Rate), KEYS[6] the jobs waiting
-- for a permit (ZSET: job attempt -> its held order, ms), KEYS[7] when
-- each of those stops counting (ZSET: job attempt -> ms)
-- ARGV[1] now (ms), or '' to read Redis's TIME, ARGV[2] the pace: ms
-- between deliveries ((period + RateGuard)/limit, may be fractional; 0:
-- no rate limit),
-- ARGV[3] parallelism (0: none), ARGV[4] a permit's (and a probe's) lease
-- (ms), ARGV[5] 1 when the topic has a circuit breaker, ARGV[6] '' to ask
-- for jobs due now, or (ahead) how far past its due time (ms) a job's time
-- may be for its process to hold it, ARGV[7] how long a job refused a
-- permit counts as waiting after it asked (ms), ARGV[8] the channel to
-- publish ARGV[9] on when a permit is free but kept for a job waiting
-- ahead ('' none), then the jobs' attempts,
-- "<tenant>/<topic>/<id>#<attempt>", oldest due first, each followed by its
-- due time (ms) when ahead, by its held order (kairos.HeldOrder, ms)
-- otherwise.
-- Ahead (Store.Pace) serves a flow with a rate limit and neither
-- parallelism nor breaker, for jobs just claimed, before they are due: each
-- takes the first free time at or after its due time, and its process
-- holds it until then (code 0 with the time), or gives it back to Redis
-- when the time is more than ARGV[6] past its due time (code 1, reserved). So a
-- claim's jobs cost one call, not one a job as they come due.
-- Breaker: while it is open, every job waits until its cool-down ends;
-- then (half-open) the first job to ask goes as the probe, and the others
-- wait for its answer (asking again every second, or when the probe's
-- lease lapses); breaker.lua closes or opens it again with the answer.
-- Rate: the flow's calendar hands out times at least one interval apart,
-- each once: the times taken (ZSET, from an interval ago on) and the pace,
-- from which every time is free. A job takes the first free time at or
-- after its own (take): its due time ahead, now otherwise; so jobs claimed
-- ahead by several shards or processes each keep their due time while the
-- rate allows it, in whatever order they ask. Asked now, a job gets the
-- next free time: if it has come
-- (or comes within a millisecond: jobs due together under a pace finer
-- than that, or a little apart, need no round trip), the job goes; if not,
-- the job reserves it and is given back to Redis to wait for it, and
-- coming back it goes. (Told to go only now, a process
-- that stalls sends late rather than in a bunch.) One that comes back
-- more than RATE_LATE ms after its time (its process was slow) takes a
-- new one: its old time passed unused, so deliveries never bunch above
-- the pace by more than that (the interval's guard, Go's RateGuard,
-- covers it).
-- Parallelism: a job goes only with a permit, taken here and given back by
-- Store.Done (or lapsed with its lease); a job without one is tried again,
-- keeping its reservation. The permits go in held order across processes:
-- a job refused one waits in the flow's waiting set (scored by its held
-- order) until it gets one, and a free permit goes to a job only when no
-- other waiting job is ahead of it (a lower score); the one behind is
-- refused and waits too, so the process of the one ahead takes the permit
-- when it asks again. Each ask renews a waiting job's lapse; one not asked
-- about for ARGV[7] (its process died, or gave it back to Redis) stops
-- counting. A flow with no job waiting pays one EXISTS a call for this.
-- A job refused a free permit (one waits ahead of it) says so on
-- ARGV[8]: the process holding the one ahead asks again at once, so the
-- permit is not left idle until that process's next retry.
-- Reply: for each job, code and time: 0 go now (with a permit when
-- parallelism is set), 1 wait until the time (reserved, or the
-- breaker's), 2 no permit free, 3 go now as the breaker's probe (without
-- rate or permit).
local pace, resv, permits, breaker = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local waitq, lapses = KEYS[6], KEYS[7]
local now = clock(ARGV[1])
local interval, par, lease = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local waitLapse = tonumber(ARGV[7]) or 0
local free, waiting, queued, passed = 0, false, false, false
if par > 0 then
  redis.call('ZREMRANGEBYSCORE', permits, '-inf', now) -- lapsed: their holders died
  free = par - redis.call('ZCARD', permits)
  waiting = redis.call('EXISTS', waitq) == 1
  if waiting and free > 0 then
    -- waiting jobs no longer asked about stop counting
    local gone = redis.call('ZRANGEBYSCORE', lapses, '-inf', now, 'LIMIT', 0, 1000)
    if #gone > 0 then
      redis.call('ZREM', waitq, unpack(gone))
      redis.call('ZREM', lapses, unpack(gone))
      waiting = redis.call('EXISTS', waitq) == 1
    end
  end
end
local nextAt = tonumber(redis.call('GET', pace) or '0')
local taken = KEYS[5]
local out = {}
local reserved = false

local function ms3(t)
  return string.format('%.3f', t)
end

-- take returns the first free time at or after t, and takes it. From the
-- pace on every time is free; before it, t is free unless a time taken is
-- within an interval of it: then the time just after the latest of those
-- is tried, a few times, and the pace after that. Within a call, a job due
-- no earlier than the one before, whose own time is not free, goes on
-- from where that one's search ended (proven): a backlog's jobs (due
-- together, or asked now) cost two commands each, not a walk over the
-- times taken before them.
local lastDue, proven = -1, -1
local function take(t)
  local due, tries = t, 0
  while t < nextAt do
    local c = redis.call('ZREVRANGEBYSCORE', taken, '(' .. ms3(t + interval), '(' .. ms3(t - interval), 'WITHSCORES', 'LIMIT', 0, 1)
    if not c[2] then
      break
    end
    t = tonumber(c[2]) + interval
    if tries == 0 and due >= lastDue then
      t = math.max(t, proven) -- the times between were tried: none is free
    end
    tries = tries + 1
    if tries >= 8 then
      t = math.max(t, nextAt)
    end
  end
  local m = ms3(t)
  redis.call('ZADD', taken, m, m)
  nextAt = math.max(nextAt, t + interval)
  lastDue, proven = due, t + interval
  return t
end

-- reservation takes job attempt m's reserved time out of the reservations
-- and returns it; nil when it has none, or (back more than RATE_LATE ms
-- after it: its process was slow) when it must take a new one, so
-- deliveries never bunch above the pace.
local function reservation(m)
  local slot = redis.call('ZSCORE', resv, m)
  if not slot then
    return nil
  end
  redis.call('ZREM', resv, m)
  slot = tonumber(slot)
  if slot < now - RATE_LATE then
    return nil
  end
  return slot
end

local function reserve(m, slot)
  redis.call('ZADD', resv, slot, m)
  reserved = true
end

-- overtaken reports whether a waiting job other than m is ahead of held
-- order o.
local function overtaken(m, o)
  if not waiting then
    return false
  end
  local h = redis.call('ZRANGE', waitq, 0, 1, 'WITHSCORES')
  for k = 1, #h, 2 do
    if h[k] ~= m then
      return tonumber(h[k + 1]) < o
    end
  end
  return false
end

local ahead = tonumber(ARGV[6])
local first, step, anyReserved = 10, 2, false
if ahead then
  anyReserved = redis.call('EXISTS', resv) == 1 -- rare: jobs pushed back far
end
if interval > 0 then
  redis.call('ZREMRANGEBYSCORE', taken, '-inf', '(' .. ms3(now - interval)) -- in the way of no time to come
end
local bst, openUntil, probe, probeEnd = BRK_ST.closed, 0, false, 0
if ARGV[5] == '1' then
  local b = redis.call('HMGET', breaker, BRK.state, BRK.openUntil, BRK.probe, BRK.probeEnd)
  bst, openUntil, probe, probeEnd = b[1] or BRK_ST.closed, tonumber(b[2] or '0'), b[3], tonumber(b[4] or '0')
  if bst == BRK_ST.open and now >= openUntil then
    bst, probe = BRK_ST.half, false -- cool-down over: a probe may go
  elseif bst == BRK_ST.half and probe and now >= probeEnd then
    probe = false -- the probe's process vanished: another may go
  end
end
for i = first, #ARGV, step do
  local m = ARGV[i]
  local code, at = 0, now
  if ahead then
    -- a rate limit alone: the job's reserved time if it has one, else the
    -- first free time from its due time
    local slot = nil
    if anyReserved then
      slot = reservation(m)
    end
    local due = math.max(tonumber(ARGV[i + 1]), now)
    if not slot then
      slot = take(due)
    end
    at = slot
    if slot < due + 1 then
      at = due -- under a millisecond later (a pace finer than that), as a job asked now
    end
    if slot > due + ahead then
      reserve(m, slot)
      code = 1
    end
  elseif bst == BRK_ST.open then
    code, at = 1, openUntil
  elseif bst == BRK_ST.half and probe then
    code, at = 1, math.min(now + 1000, probeEnd)
  elseif bst == BRK_ST.half then
    probe, probeEnd = m, now + lease
    redis.call('HSET', breaker, BRK.state, BRK_ST.half, BRK.probe, m, BRK.probeEnd, probeEnd)
    code = 3
  elseif par > 0 and (free <= 0 or overtaken(m, tonumber(ARGV[i + 1]))) then
    code = 2
    passed = passed or free > 0
    redis.call('ZADD', waitq, ARGV[i + 1], m)
    redis.call('ZADD', lapses, now + waitLapse, m)
    waiting, queued = true, true
  elseif interval > 0 then
    local slot = reservation(m) or take(now)
    if slot > now + 1 then -- not come yet (a reservation back early waits again)
      reserve(m, slot)
      code, at = 1, slot
    end
  end
  if code == 0 and par > 0 then
    redis.call('ZADD', permits, now + lease, m)
    free = free - 1
  end
  if code ~= 2 and waiting and redis.call('ZREM', waitq, m) == 1 then
    redis.call('ZREM', lapses, m) -- it waits no more
    waiting = redis.call('EXISTS', waitq) == 1
  end
  out[#out + 1] = code
  out[#out + 1] = string.format('%d', math.ceil(at))
end
if interval > 0 then
  -- the pace is kept while it matters, and a day after the last
  -- reservation: then reservations of jobs cancelled meanwhile go
  redis.call('SET', pace, string.format('%.3f', nextAt), 'PX', math.ceil(math.max(nextAt - now, 0)) + 86400000)
  if reserved then
    redis.call('PEXPIRE', resv, math.ceil(math.max(nextAt - now, 0)) + 86400000)
  end
  redis.call('PEXPIRE', taken, math.ceil(math.max(nextAt - now, 0)) + 86400000)
end
if par > 0 then
  redis.call('PEXPIRE', permits, lease + 60000)
end
if queued then
  redis.call('PEXPIRE', waitq, waitLapse + 60000)
  redis.call('PEXPIRE', lapses, waitLapse + 60000)
end
if passed and ARGV[8] ~= '' then
  redis.call('PUBLISH', ARGV[8], ARGV[9])
end
return out
