-- flowgate.lua: decide which claimed jobs of one flow (a topic's, or a
-- flow key's), due now, may start (Store.Gate): the flows whose jobs ask
-- the gate before firing (kairos's Topic.AsksGate). Every kairos process
-- asks it, so the limits hold across processes.
-- KEYS[1] the flow's pace, KEYS[2] the times taken from its calendar,
-- KEYS[3] its waiting set, KEYS[4] when each waiting job stops counting
-- (flow.lua: newFlow's k), KEYS[5] its permits (ZSET: job attempt -> when
-- the permit lapses, ms), KEYS[6] its circuit breaker (HASH, breaker.lua)
-- ARGV[1] now (ms), or '' to read Redis's TIME
-- ARGV[2] interval: ms between deliveries (may be fractional; 0: no rate
--   limit)
-- ARGV[3] parallelism: the flow's permits (0: none)
-- ARGV[4] lease: how long a permit (and a probe) is held (ms)
-- ARGV[5] breaker: 1 when the topic has a circuit breaker, else 0
-- ARGV[6] waitLapse: how long a waiting job still counts after it was
--   expected back (ms)
-- ARGV[7] freedChannel: the channel to publish freedMessage on when a
--   permit is free but kept for a job waiting ahead ('' none)
-- ARGV[8] freedMessage
-- ARGV[9...] the jobs, in wait order, two arguments each: its attempt
--   "<tenant>/<topic>/<id>#<attempt>" and its wait order
--   (kairos.WaitOrder, ms)
-- Waiting and rate: see flow.lua. A job the rate keeps waiting is told its
-- turn (code 1).
-- Breaker: while it is open, every job waits until its cool-down ends;
-- then (half-open) the job first in wait order goes as the probe (one
-- behind a waiting job of a better order expected by then is told to come
-- back in a second), and the others wait for its answer (asking again
-- every second, or when the probe's lease lapses); breaker.lua closes or
-- opens it again with the answer.
-- Parallelism: a job goes only with a permit, taken here and given back by
-- Store.ReturnPermit (or lapsed with its lease); a job without one waits,
-- held by its process, which asks again about it. A free permit goes to a
-- job only when no waiting job of a better wait order (not an equal one)
-- expected by now is ahead of it; the one behind is refused, so the
-- process of the one ahead takes the permit when it asks again, and is
-- told at once on freedChannel.
-- Reply: for each job, code and time (ms): 0 go now (with a permit when
-- parallelism is set), 1 wait until the time (its turn, or the
-- breaker's), 2 no permit free, 3 go now as the breaker's probe (without
-- rate or permit).
local arg = {
  now = clock(ARGV[1]),
  interval = tonumber(ARGV[2]),
  parallelism = tonumber(ARGV[3]),
  lease = tonumber(ARGV[4]),
  breaker = ARGV[5] == '1',
  waitLapse = tonumber(ARGV[6]),
  freedChannel = ARGV[7],
  freedMessage = ARGV[8],
}
local JOBS, PER_JOB = 9, 2

local permits, breaker = KEYS[5], KEYS[6]
local now, par, lease = arg.now, arg.parallelism, arg.lease
local flow = newFlow({pace = KEYS[1], taken = KEYS[2], waitq = KEYS[3], lapses = KEYS[4]}, now, arg.interval, arg.waitLapse)
local free, passed = 0, false
if par > 0 then
  redis.call('ZREMRANGEBYSCORE', permits, '-inf', now) -- lapsed: their holders died
  free = par - redis.call('ZCARD', permits)
end

local bst, openUntil, probe, probeEnd = BRK_ST.closed, 0, false, 0
if arg.breaker then
  local b = redis.call('HMGET', breaker, BRK.state, BRK.openUntil, BRK.probe, BRK.probeEnd)
  bst, openUntil, probe, probeEnd = b[1] or BRK_ST.closed, tonumber(b[2] or '0'), b[3], tonumber(b[4] or '0')
  if bst == BRK_ST.open and now >= openUntil then
    bst, probe = BRK_ST.half, false -- cool-down over: a probe may go
  elseif bst == BRK_ST.half and probe and now >= probeEnd then
    probe = false -- the probe's process vanished: another may go
  end
end

local out = {}
for i = JOBS, #ARGV, PER_JOB do
  local m, o = ARGV[i], tonumber(ARGV[i + 1]) - WAIT_EPOCH
  local code, at = 0, now
  if bst == BRK_ST.open then
    code, at = 1, openUntil
  elseif bst == BRK_ST.half and probe then
    code, at = 1, math.min(now + 1000, probeEnd)
  elseif bst == BRK_ST.half and flow.behind(m, o) then
    code, at = 1, now + 1000 -- the probe is a job ahead, due back now
  elseif bst == BRK_ST.half then
    probe, probeEnd = m, now + lease
    redis.call('HSET', breaker, BRK.state, BRK_ST.half, BRK.probe, m, BRK.probeEnd, probeEnd)
    code = 3
  elseif par > 0 and (free <= 0 or flow.behind(m, o)) then
    code = 2
    passed = passed or free > 0
  elseif arg.interval > 0 then
    code, at = flow.paced(m, o, now, 1)
    if code == 0 then
      at = now
    end
  end
  if code == 1 then
    flow.wait(m, o, at)
  elseif code == 2 then
    flow.wait(m, o, now) -- its process asks again
  else
    flow.went(m)
  end
  if code == 0 and par > 0 then
    redis.call('ZADD', permits, now + lease, m)
    free = free - 1
  end
  out[#out + 1] = code
  out[#out + 1] = string.format('%d', math.ceil(at))
end
flow.close()
if par > 0 then
  redis.call('PEXPIRE', permits, lease + 60000)
end
if passed and arg.freedChannel ~= '' then
  redis.call('PUBLISH', arg.freedChannel, arg.freedMessage)
end
return out
