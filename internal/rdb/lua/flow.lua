-- flow.lua: flow control's shared part, for flowpace.lua (Store.Pace) and
-- flowgate.lua (Store.Gate): a flow's calendar (its rate limit) and its
-- waiting set (its jobs' wait order across processes). Which limits apply
-- to a topic, and which of the two scripts asks them, is kairos's flow
-- rule (flow.go); each script reads its KEYS and ARGV into named locals
-- and opens the flow with newFlow.
-- Waiting: a job a limit keeps waiting is in the flow's waiting set,
-- scored by its wait order (from WAIT_EPOCH; jobs of equal order in the
-- order they came, a small fraction of a ms apart), and is told when to
-- come back; whichever process asks, a job goes only when no waiting job
-- ahead of it should go first. A waiting job counts until waitLapse after
-- it is expected back (a job refused a permit: after its last ask): one
-- whose process died, or that was cancelled meanwhile, stops keeping the
-- others waiting then. A flow with no job waiting pays one ZCARD a call.
-- Rate: the flow's calendar hands out times at least one interval apart,
-- each once: the times taken (ZSET, from an interval ago on) and the pace,
-- from which every time is free. A job takes the first free time at or
-- after its own: its due time when paced, now at the gate; so jobs paced
-- by several shards or processes each keep their due time while the rate
-- allows it, in whatever order they ask. At the gate, a job goes if that
-- time has come (or comes within a millisecond: jobs due together under a
-- pace finer than that need no round trip). A time is taken only by a job
-- that goes: one whose time is later (or that has waiting jobs ahead of
-- it, whose turns come first) waits, told to come back at its turn (the
-- free time after one for each waiting job ahead of it), and given back
-- to Redis until then; coming back, it goes at its turn unless a job
-- ahead of it is expected then (one placed ahead of it meanwhile): then it
-- waits again, after the jobs ahead. So the times go in wait order across
-- processes, a backlog's jobs come back once each, and deliveries never
-- bunch above the pace (the interval's guard, Go's RateGuard, covers a
-- start up to RATE_LATE ms late).

-- Wait orders are kept from WAIT_EPOCH (2026-01-01, ms), so that the jobs
-- of one millisecond can be kept apart finely: tieStep apart, two ulps
-- of the order's double (a 131072nd of a ms in 2026, a 32768th in 2030).
-- A script turns a job's wait order (kairos.WaitOrder, ms) into its score
-- by taking WAIT_EPOCH off.
local WAIT_EPOCH = 1767225600000

-- newFlow opens one call's flow control of a flow at now (ms): k names its
-- keys (k.pace, STRING: from when every time is free, ms; k.taken, ZSET:
-- the times taken from its calendar; k.waitq, ZSET: job attempt -> its
-- wait order; k.lapses, ZSET: job attempt -> when it stops counting, ms),
-- interval is the ms between deliveries ((period + RateGuard)/limit, may
-- be fractional; 0: no rate limit), waitLapse how long a waiting job still
-- counts after it was expected back (ms). It returns the flow's calls:
-- paced(m, o, t0, allow): the rate's answer for job attempt m of wait
--   order o (see paced below);
-- behind(m, o): whether a waiting job of a better wait order than o (not
--   m; not one of equal order) is expected back by now;
-- wait(m, o, back): m waits (in the waiting set at order o; it keeps its
--   place if there already), expected back at back (ms);
-- went(m): m goes: it leaves the waiting set;
-- close(): writes back what the call changed (the pace, the calendar's
--   and the waiting set's expiry); called once, last.
local function newFlow(k, now, interval, waitLapse)
  local pace, taken, waitq, lapses = k.pace, k.taken, k.waitq, k.lapses
  waitLapse = waitLapse or 0
  local queued = false
  local count = redis.call('ZCARD', waitq) -- jobs waiting (lapsed ones too, until clean)
  local fresh, lastLapse = count == 0, 0 -- fresh: the set has no TTL (new, or emptied here)
  local nextAt = tonumber(redis.call('GET', pace) or '0')

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
    -- time is taken (waiting jobs of one time ask once).
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

  -- The waiting set's helpers are made when first needed (useQueue): a call
  -- that finds no job waiting, and makes none wait, pays for none of them.
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

    -- join puts job attempt m in the waiting set at wait order o, behind the
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

    -- behind reports whether a waiting job of a better wait order than o (not
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

  -- paced returns code and time for job attempt m of wait order o under
  -- the rate, asking for time t0 (its due time when paced, now at the gate), going
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

  if interval > 0 then
    redis.call('ZREMRANGEBYSCORE', taken, '-inf', '(' .. ms3(now - interval)) -- in the way of no time to come
  end

  local flow = {paced = paced}

  flow.behind = function(m, o)
    return count > 0 and useQueue() and behind(m, o)
  end

  flow.wait = function(m, o, back)
    useQueue()
    if not member[m] then -- (made by useQueue)
      join(m, o, true)
    end
    expect(m, back)
  end

  flow.went = function(m)
    if count > 0 and useQueue() then
      unwait(m)
    end
  end

  flow.close = function()
    if interval > 0 then
      -- the pace is kept while it matters, and a day after
      redis.call('SET', pace, string.format('%.3f', nextAt), 'PX', math.ceil(math.max(nextAt - now, 0)) + 86400000)
      redis.call('PEXPIRE', taken, math.ceil(math.max(nextAt - now, 0)) + 86400000)
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
  end

  return flow
end
