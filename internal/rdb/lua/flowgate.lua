-- flowgate.lua: decide which claimed jobs of one flow (a topic's, or a
-- flow key's) may start now (Store.Gate, Store.Pace). Every kairos process
-- asks it before firing, so the limits hold across processes.
-- KEYS[1] the flow's pace (STRING: from when every time is free, ms),
-- KEYS[2] its permits (ZSET: job attempt -> when the permit lapses, ms),
-- KEYS[3] its circuit breaker (HASH, breaker.lua), KEYS[4] the times
-- taken from its calendar (ZSET, see Rate), KEYS[5] the jobs a limit
-- holds back (ZSET: job attempt -> its held order, ms), KEYS[6] when each
-- of those stops counting (ZSET: job attempt -> ms: when it is expected
-- back, plus ARGV[7])
-- ARGV[1] now (ms), or '' to read Redis's TIME, ARGV[2] the pace: ms
-- between deliveries ((period + RateGuard)/limit, may be fractional; 0:
-- no rate limit),
-- ARGV[3] parallelism (0: none), ARGV[4] a permit's (and a probe's) lease
-- (ms), ARGV[5] 1 when the topic has a circuit breaker, ARGV[6] '' to ask
-- for jobs due now, or (ahead) how far past its due time (ms) a job's time
-- may be for its process to hold it, ARGV[7] how long a held-back job
-- still counts after it was expected back (ms), ARGV[8] the channel to
-- publish ARGV[9] on when a permit is free but kept for a job waiting
-- ahead ('' none), then the jobs' attempts,
-- "<tenant>/<topic>/<id>#<attempt>", in held order, each followed by its
-- held order (kairos.HeldOrder, ms), and when ahead by its due time (ms).
-- Ahead (Store.Pace) serves a flow with a rate limit and neither
-- parallelism nor breaker, for jobs just claimed, before they are due: each
-- takes the first free time at or after its due time, and its process
-- holds it until then (code 0 with the time); a job whose time would be
-- more than ARGV[6] past its due time is held back (code 1). So a claim's
-- jobs cost one call, not one a job as they come due.
-- Held back: a job a limit holds back waits in the flow's waiting set,
-- scored by its held order (from HELD_EPOCH; jobs of equal order in the
-- order they came, a small fraction of a ms apart), and is told when to
-- come back; whichever process asks, a job goes only when no waiting job
-- ahead of it should go first. A waiting job counts until ARGV[7] after
-- it is expected back (a job refused a permit: after its last ask): one
-- whose process died, or that was cancelled meanwhile, stops holding the
-- others back then. A flow with no job waiting pays one ZCARD a call.
-- Breaker: while it is open, every job waits until its cool-down ends;
-- then (half-open) the job first in held order goes as the probe (one
-- behind a waiting job of a better order expected by then is told to come
-- back in a second), and the others wait for its answer (asking again every second,
-- or when the probe's lease lapses); breaker.lua closes or opens it again
-- with the answer.
-- Rate: the flow's calendar hands out times at least one interval apart,
-- each once: the times taken (ZSET, from an interval ago on) and the pace,
-- from which every time is free. A job takes the first free time at or
-- after its own: its due time ahead, now otherwise; so jobs claimed ahead
-- by several shards or processes each keep their due time while the rate
-- allows it, in whatever order they ask. Asked now, a job goes if that
-- time has come (or comes within a millisecond: jobs due together under a
-- pace finer than that need no round trip). A time is taken only by a job
-- that goes: one whose time is later (or that has waiting jobs ahead of
-- it, whose turns come first) is held back, told to come back at its turn
-- (the free time after one for each waiting job ahead of it), and given
-- back to Redis until then; coming back, it goes at its turn unless a job
-- ahead of it is expected then (one placed ahead of it meanwhile): then
-- it waits again, after the jobs ahead. So the times go in held order
-- across processes, a backlog's jobs come back once each, and deliveries
-- never bunch above the pace (the interval's guard, Go's RateGuard,
-- covers a start up to RATE_LATE ms late).
-- Parallelism: a job goes only with a permit, taken here and given back by
-- Store.Done (or lapsed with its lease); a job without one waits, held by
-- its process, which asks again about it. A free permit goes to a job only
-- when no waiting job of a better held order (not an equal one) expected
-- by now is ahead of it; the one behind is refused, so the process of the
-- one ahead takes the permit when it asks again, and is told at once on
-- ARGV[8].
-- Reply: for each job, code and time: 0 go now (with a permit when
-- parallelism is set; ahead: at the time), 1 wait until the time (its
-- turn, or the breaker's), 2 no permit free, 3 go now as the breaker's
-- probe (without rate or permit).
local pace, permits, breaker, taken = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local waitq, lapses = KEYS[5], KEYS[6]
local now = clock(ARGV[1])
local interval, par, lease = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local ahead = tonumber(ARGV[6])
local waitLapse = tonumber(ARGV[7]) or 0
local free, queued, passed = 0, false, false
local count = redis.call('ZCARD', waitq) -- jobs waiting (lapsed ones too, until clean)
local fresh, lastLapse = count == 0, 0 -- fresh: the set has no TTL (new, or emptied here)
if par > 0 then
  redis.call('ZREMRANGEBYSCORE', permits, '-inf', now) -- lapsed: their holders died
  free = par - redis.call('ZCARD', permits)
end
local nextAt = tonumber(redis.call('GET', pace) or '0')
local out = {}

local function ms3(t)
  return string.format('%.3f', t)
end

-- The calendar (rate limit only): see Rate.
local firstFree, takeAt, nthFree
if interval > 0 then
  -- firstFree returns the first free time at or after t (and t). From the
  -- pace on every time is free; before it, t is free unless a time taken is
  -- within an interval of it: then the time just after the latest of those
  -- is tried, a few times, and the pace after that. Within a call, a job due
  -- no earlier than the last one to take a time, whose own time is not
  -- free, goes on from where that one's search ended (proven): a backlog's
  -- jobs (due together, or asked now) cost a command or two each, not a walk
  -- over the times taken before them; the last search is kept until a
  -- time is taken (held-back jobs of one time ask once).
  local lastDue, proven = -1, -1
  local memoT, memoS = nil, nil -- the last search, until a time is taken
  firstFree = function(t)
    if memoT == t then
      return memoS, t
    end
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
    memoT, memoS = due, t
    return t, due
  end

  -- takeAt takes free time t, found for a job due at due.
  local afterT, afterK = nil, 0
  takeAt = function(t, due)
    local m = ms3(t)
    redis.call('ZADD', taken, m, m)
    nextAt = math.max(nextAt, t + interval)
    lastDue, proven = due, t + interval
    memoT, afterT = nil, nil
  end

  -- nthFree returns about when the n-th free time after free time t comes
  -- (n = 0: t): n intervals on, and one more for each time taken between.
  nthFree = function(t, n)
    if n <= 0 then
      return t
    end
    if afterT ~= t then
      afterT, afterK = t, redis.call('ZCOUNT', taken, ms3(t), '+inf')
    end
    local at = t + (n + afterK) * interval
    if at >= nextAt then
      return at -- past every time taken
    end
    at = t + n * interval
    for _ = 1, 4 do
      local k = redis.call('ZCOUNT', taken, ms3(t), '(' .. ms3(at))
      local later = t + (n + k) * interval
      if later <= at then
        break
      end
      at = later
    end
    return at
  end

end

-- Held orders are kept from HELD_EPOCH (2026-01-01, ms), so that the jobs
-- of one millisecond can be kept apart finely: tieStep apart, two ulps
-- of the order's double (a 131072nd of a ms in 2026, a 32768th in 2030).
local HELD_EPOCH = 1767225600000

-- The waiting set's helpers are made when first needed (useQueue): a call
-- that finds no job waiting, and holds none back, pays for none of them.
local flush, join, expect, unwait, countAhead, behind, headFrom, yielded
local member, queueMade = nil, false -- member: jobs this call put in the set (join)
local function useQueue()
  if queueMade then
    return true
  end
  queueMade, member = true, {}

  -- The waiting set. head: when each of its first jobs (up to 8) is
  -- expected back (headAt: a job's index in it), read once a call and kept
  -- up as jobs join at its end; read again after a job joined or left ahead
  -- of its last. maxScore: the highest score, read when a job first joins.
  local head, headAt, headM, headTop, maxScore = nil, {}, {}, nil, nil
  local tieTop = {}

  -- Writes to the waiting set are kept (pendQ: jobs joined at its end,
  -- pendL: when jobs are expected) and written in one ZADD each (flush)
  -- before the set is next read, and as the call ends: a backlog's jobs
  -- joining in one call cost no command each.
  local pendQ, pendL, pending = {}, {}, false
  flush = function()
    if not pending then
      return
    end
    for key, p in pairs({[waitq] = pendQ, [lapses] = pendL}) do
      local args = {}
      for w, v in pairs(p) do
        args[#args + 1] = v
        args[#args + 1] = w
      end
      if #args > 0 then
        callMany('ZADD', key, args)
      end
    end
    pendQ, pendL, pending = {}, {}, false
  end

  local function scanHead()
    if head then
      return head
    end
    flush()
    head, headAt, headM = {}, {}, {}
    local ws = redis.call('ZRANGE', waitq, 0, 7, 'WITHSCORES')
    for k = 1, #ws, 2 do
      local l = redis.call('ZSCORE', lapses, ws[k])
      head[#head + 1] = l and tonumber(l) - waitLapse or now
      headAt[ws[k]], headM[#head] = #head, ws[k]
    end
    headTop = #ws == 16 and tonumber(ws[16]) or nil
    return head
  end

  -- clean takes the waiting jobs no longer expected out: they stop counting.
  -- Done once a call, when a job finds others ahead of it.
  local cleaned = false
  local function clean()
    cleaned = true
    flush()
    local gone = redis.call('ZRANGEBYSCORE', lapses, '-inf', now, 'LIMIT', 0, 1000)
    if #gone > 0 then
      count = count - redis.call('ZREM', waitq, unpack(gone))
      redis.call('ZREM', lapses, unpack(gone))
      fresh = fresh or count == 0
      for _, w in ipairs(gone) do
        member[w] = nil
      end
      head, maxScore = nil, nil
    end
  end

  -- join puts job attempt m in the waiting set at held order o, behind the
  -- jobs of that order already there, unless it waits already (it keeps its
  -- place), and returns how many waiting jobs are ahead of it (those no
  -- longer expected left out, unless only is set: then it only joins),
  -- whether it is new there, and whether it joined at the end.
  join = function(m, o, only)
    member[m] = true
    if count == 0 then
      pendQ[m], pending = string.format('%.17g', o), true
      count, queued, head, maxScore, tieTop[o] = 1, true, nil, o, o
      return 0, true, true
    end
    local r = redis.call('ZRANK', waitq, m)
    local new, atEnd = not r, false
    if new then
      if not maxScore then
        flush()
        local e = redis.call('ZRANGE', waitq, -1, -1, 'WITHSCORES')
        maxScore = tonumber(e[2])
      end
      local score, top = o, nil
      if o + 1 > maxScore then
        top = maxScore >= o and maxScore -- at the end (behind the jobs of its order)
      else
        top = tieTop[o] -- among the others: behind the jobs of its order
        if not top then
          flush()
          local e = redis.call('ZREVRANGEBYSCORE', waitq, '(' .. ms3(o + 1), ms3(o), 'WITHSCORES', 'LIMIT', 0, 1)
          top = e[2] and tonumber(e[2])
        end
      end
      if top then
        local _, e = math.frexp(math.abs(o) + 1)
        local step = 2 ^ (e - 52) -- tieStep
        score = math.min(top + step, o + 1 - step)
      end
      if score > maxScore then
        pendQ[m], pending = string.format('%.17g', score), true
      else
        flush()
        redis.call('ZADD', waitq, string.format('%.17g', score), m)
      end
      count, queued, tieTop[o] = count + 1, true, score
      if score > maxScore then
        r, maxScore, atEnd = count - 1, score, true
        if head and #head < 8 then
          local n = #head + 1
          head[n], headAt[m], headM[n] = math.huge, n, m -- expected: see expect
          if n == 8 then
            headTop = score
          end
        end
      else
        r = redis.call('ZRANK', waitq, m)
        if not headTop or score < headTop then
          head = nil
        end
      end
    end
    if r > 0 and not cleaned and not only then
      clean()
      r = redis.call('ZRANK', waitq, m)
      if not r then
        return join(m, o) -- it had lapsed itself
      end
    end
    return r, new, atEnd
  end

  -- expect records when waiting job m is expected back (its lapse follows).
  local lastExpected = nil -- when the last waiting job is expected (yielded)
  expect = function(m, t)
    pendL[m], pending = string.format('%.17g', t + waitLapse), true
    lastLapse = math.max(lastLapse, t + waitLapse)
    if lastExpected then
      lastExpected = math.max(lastExpected, t)
    end
    if head and headAt[m] then
      head[headAt[m]] = t
    end
    queued = true
  end

  -- unwait takes m out of the waiting set: it goes.
  unwait = function(m)
    member[m] = nil
    pendL[m] = nil
    local left = pendQ[m] ~= nil -- joined in this call: not written yet
    pendQ[m] = nil
    if not left and count > 0 and redis.call('ZREM', waitq, m) == 1 then
      redis.call('ZREM', lapses, m)
      left = true
    end
    if left then
      count = count - 1
      fresh = fresh or count == 0
      if headAt[m] then
        head = nil
      end
    end
  end

  -- countAhead counts, among the first (up to 8) of the r waiting jobs ahead of
  -- job m, those expected back by now, and those late by more than
  -- RATE_LATE (presumed gone: their turns pass to the jobs behind).
  countAhead = function(r, m)
    local due, late, k = 0, 0, 0
    for i, e in ipairs(scanHead()) do
      if headM[i] ~= m then
        k = k + 1
        if k > r then
          break
        end
        if e <= now then
          due = due + 1
          if e < now - RATE_LATE then
            late = late + 1
          end
        end
      end
    end
    return due, late
  end

  -- behind reports whether a waiting job of a better held order than o (not
  -- m; one of equal order does not count) is expected back by now: it
  -- should go first. Asked only while jobs wait.
  behind = function(m, o)
    local better = '(' .. string.format('%.17g', o)
    flush()
    local r = redis.call('ZCOUNT', waitq, '-inf', better)
    if r > 0 and not cleaned then
      clean()
      r = redis.call('ZCOUNT', waitq, '-inf', better)
    end
    return r > 0 and countAhead(r, m) > 0
  end

  -- headFrom returns from when the first waiting jobs are expected: the
  -- earliest of them (a new job's turn comes after theirs; none comes before
  -- its own due time).
  headFrom = function()
    local from = math.huge
    for _, e in ipairs(scanHead()) do
      from = math.min(from, e)
    end
    return from < math.huge and from or now
  end

  -- yielded returns the first free time from s that no waiting job ahead of
  -- m (r of them) is expected back at (each has its turn, and keeps it),
  -- and whether that is later than s; for a job new to the set, a time after
  -- the last one expected is taken as free.
  yielded = function(m, r, s, due, new)
    if new and not lastExpected then
      flush()
      local e = redis.call('ZRANGE', lapses, -1, -1, 'WITHSCORES')
      lastExpected = tonumber(e[2] or waitLapse) - waitLapse
    end
    if new and s > lastExpected + interval / 2 then
      return s, due, false -- none is expected then
    end
    local moved = false
    flush()
    for _ = 1, 4 do
      local ws = redis.call('ZRANGEBYSCORE', lapses, '(' .. ms3(s - interval / 2 + waitLapse), ms3(s + interval / 2 + waitLapse), 'LIMIT', 0, 4)
      local kept = false
      for _, w in ipairs(ws) do
        if w ~= m and (redis.call('ZRANK', waitq, w) or r) < r then
          kept = true
        end
      end
      if not kept then
        break
      end
      s, due = firstFree(s + interval)
      moved = true
    end
    return s, due, moved
  end

  return true
end

-- paced returns code and time for job attempt m of held order o under
-- the rate, asking for time t0 (its due time ahead, now otherwise), going
-- when its time comes within allow ms of t0: 0 and the time it took, or 1
-- and its turn. A job's turn is its own free time, unless jobs wait ahead
-- of it: a job back at its turn keeps it, unless a job ahead of it is
-- expected back then (one that came ahead of it meanwhile); that one, and
-- a job new to the waiting set, come after the jobs ahead (the free time
-- after one for each, counted from when the first of them is expected,
-- and leaving out those long late), yielding any time a job ahead of it
-- is expected back at.
local tail = nil -- the turn of the last job this call put at the end
local function paced(m, o, t0, allow)
  local r, new, atEnd = 0, true, false
  if count > 0 and useQueue() then
    r, new, atEnd = join(m, o)
  end
  local s, due
  if r > 0 and atEnd and tail then
    -- put at the end right after another: its turn follows that one's
    s, due = firstFree(math.max(t0, tail + interval))
    s, due = yielded(m, r, s, due, true)
  else
    -- a job back at its turn looks from a ms before its due time: turns
    -- are told in whole ms, rounded up (it still starts at its due time)
    s, due = firstFree(new and t0 or math.max(t0 - 1, now))
    if r > 0 then
      local moved = false
      if not new then
        s, due, moved = yielded(m, r, s, due)
      end
      if new or moved then
        local _, late = countAhead(r, m)
        local at = nthFree(math.max(firstFree(now), headFrom()), r - late)
        if at > s + interval / 2 then
          s, due = firstFree(at)
        end
        s, due = yielded(m, r, s, due, new)
      end
    end
  end
  if r > 0 and atEnd then
    tail = s
  end
  if s > t0 + allow then
    return 1, s
  end
  takeAt(s, due)
  return 0, s
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
if interval > 0 then
  redis.call('ZREMRANGEBYSCORE', taken, '-inf', '(' .. ms3(now - interval)) -- in the way of no time to come
end
local step = 2
if ahead then
  step = 3
end
for i = 10, #ARGV, step do
  local m, o = ARGV[i], tonumber(ARGV[i + 1]) - HELD_EPOCH
  local code, at = 0, now
  if ahead then
    -- a rate limit alone: the first free time from its due time
    local due = math.max(tonumber(ARGV[i + 2]), now)
    code, at = paced(m, o, due, ahead)
    if code == 0 and at < due + 1 then
      at = due -- under a millisecond later (a pace finer than that), as a job asked now
    end
  elseif bst == BRK_ST.open then
    code, at = 1, openUntil
  elseif bst == BRK_ST.half and probe then
    code, at = 1, math.min(now + 1000, probeEnd)
  elseif bst == BRK_ST.half and count > 0 and useQueue() and behind(m, o) then
    code, at = 1, now + 1000 -- the probe is a job ahead, due back now
  elseif bst == BRK_ST.half then
    probe, probeEnd = m, now + lease
    redis.call('HSET', breaker, BRK.state, BRK_ST.half, BRK.probe, m, BRK.probeEnd, probeEnd)
    code = 3
  elseif par > 0 and (free <= 0 or count > 0 and useQueue() and behind(m, o)) then
    code = 2
    passed = passed or free > 0
  elseif interval > 0 then
    code, at = paced(m, o, now, 1)
    if code == 0 then
      at = now
    end
  end
  if code == 1 or code == 2 then
    useQueue()
    if not member[m] then -- (made by useQueue)
      join(m, o, true)
    end
    if code == 2 then
      expect(m, now) -- its process asks again
    else
      expect(m, at)
    end
  elseif count > 0 and useQueue() then
    unwait(m)
  end
  if code == 0 and par > 0 then
    redis.call('ZADD', permits, now + lease, m)
    free = free - 1
  end
  out[#out + 1] = code
  out[#out + 1] = string.format('%d', math.ceil(at))
end
if interval > 0 then
  -- the pace is kept while it matters, and a day after
  redis.call('SET', pace, string.format('%.3f', nextAt), 'PX', math.ceil(math.max(nextAt - now, 0)) + 86400000)
  redis.call('PEXPIRE', taken, math.ceil(math.max(nextAt - now, 0)) + 86400000)
end
if par > 0 then
  redis.call('PEXPIRE', permits, lease + 60000)
end
if queueMade then
  flush()
end
if queued and count > 0 then
  -- kept while its last job counts, never shortened
  local ttl = math.ceil(math.max(lastLapse - now, 0)) + 60000
  if fresh or redis.call('PTTL', waitq) < ttl then
    redis.call('PEXPIRE', waitq, ttl)
    redis.call('PEXPIRE', lapses, ttl)
  end
end
if passed and ARGV[8] ~= '' then
  redis.call('PUBLISH', ARGV[8], ARGV[9])
end
return out
