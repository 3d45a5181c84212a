-- sched.lua: schedules (layout.go, "Schedules"), put in front of every
-- script. A schedule is a header and queue in the shard's schedule hash
-- (<tag>sch: struct SCH, then instants of SCH_Q bytes each) and a body in
-- its body hash (<tag>sb: meta, settings, payload); the flag byte fl is 1
-- when paused, plus 2 when the pattern has no instant after hi (ended).

-- sparse returns schedule header v (with its queue) as a table, or nil
-- when v is false. The queue stays a string (s.qs): a claim takes one
-- instant from its front. The body is read when an occurrence is filed
-- (occurrenceBody), from body hash bk, field sf.
local function sparse(v, bk, sf)
  if not v or #v < SCH_LEN then
    return nil
  end
  local gen, cur, hi, lf, cu, fl, lt, ls, lm = (structLib or findStruct()).unpack(SCH, v)
  local s = {gen = gen, cur = cur, hi = hi, lf = lf, cu = cu, pa = fl % 2 == 1, en = fl % 4 >= 2, lt = lt, ls = ls, lm = lm,
    bk = bk, sf = sf}
  if fl < SCH_EXT then
    s.qs = string.sub(v, SCH_LEN + 1)
    return s
  end
  -- the extension (overlap, max_runs): only schedules that use them
  local ov, mr, rn, lo, bw, sk = (structLib or findStruct()).unpack(SCHX, string.sub(v, SCH_LEN + 1, SCH_LEN + SCHX_LEN))
  s.x = {ov = ov, mr = mr, rn = rn, lo = lo, bw = bw, sk = sk}
  s.qs = string.sub(v, SCH_LEN + SCHX_LEN + 1)
  return s
end

-- done reports whether schedule s fired its max_runs: it fires no more.
local function done(s)
  return s.x ~= nil and s.x.mr > 0 and s.x.rn >= s.x.mr
end

local SCH_QF = '>I' .. SCH_Q -- one queued instant

-- sget reads schedule sf of the shard of tag, or returns nil.
local function sget(scheds, tag, sf)
  return sparse(redis.call('HGET', scheds, sf), tag .. KEY.scheduleBodies, sf)
end

-- sformat returns s's header and queue as stored.
local function sformat(s)
  local fl = 0
  if s.pa then
    fl = 1
  end
  if s.en then
    fl = fl + 2
  end
  local x = s.x
  if x then
    fl = fl + SCH_EXT
    return (structLib or findStruct()).pack(SCH, s.gen, s.cur, s.hi, s.lf, s.cu, fl, s.lt, s.ls, s.lm) ..
      (structLib or findStruct()).pack(SCHX, x.ov, x.mr, x.rn, x.lo, x.bw, x.sk) .. s.qs
  end
  return (structLib or findStruct()).pack(SCH, s.gen, s.cur, s.hi, s.lf, s.cu, fl, s.lt, s.ls, s.lm) .. s.qs
end

-- sput writes s's header and queue; its body is written by whoever set
-- it (schedset.lua).
local function sput(scheds, s)
  redis.call('HSET', scheds, s.sf, sformat(s))
end

-- qfirst returns the first instant of s's queue, or nil when it is empty.
local function qfirst(s)
  if s.qs == '' then
    return nil
  end
  return ((structLib or findStruct()).unpack(SCH_QF, s.qs))
end

-- qdrop removes the first instant of s's queue (qfirst read it).
local function qdrop(s)
  s.qs = string.sub(s.qs, SCH_Q + 1)
end

-- qpop removes the first instant of s's queue and returns it (nil when
-- the queue is empty).
local function qpop(s)
  local t = qfirst(s)
  if t then
    qdrop(s)
  end
  return t
end

-- askRefill adds s to the shard's refill set (refills) when its queue
-- runs short (under REFILL_BELOW instants) and its pattern has not ended.
local function askRefill(refills, s)
  if not s.en and #s.qs < REFILL_BELOW * SCH_Q and not done(s) then
    redis.call('SADD', refills, s.sf)
  end
end

-- qpush appends instant t to s's queue.
local function qpush(s, t)
  s.qs = s.qs .. (structLib or findStruct()).pack(SCH_QF, t)
end

-- occurrenceBody returns the body of s's occurrences: its settings and
-- payload, the end of its body (read once a call).
local function occurrenceBody(s)
  if not s.ob then
    local b = s.body
    if not b then
      b = redis.call('HGET', s.bk, s.sf) or ''
    end
    s.ob = string.sub(b, s.lm + 1)
  end
  return s.ob
end

-- occurrenceID is the job id of schedule sid's occurrence at t (ms).
local function occurrenceID(sid, t)
  return sid .. OCC_MARK .. string.format('%d', t)
end

-- scheduleOf returns the schedule id of an occurrence's job id, or nil
-- when id is not one: "<schedule id>@<unix ms>" (kairos.ScheduleOf).
local function scheduleOf(id)
  if not string.find(id, OCC_MARK, 1, true) then
    return nil -- most ids: one plain search
  end
  return string.match(id, '^(.+)' .. OCC_MARK .. '%d+$')
end

-- isOccurrence reports whether id is an occurrence's, as scheduleOf(id)
-- ~= nil does, without making a string.
local function isOccurrence(id)
  if not string.find(id, OCC_MARK, 1, true) then
    return false -- most ids: one plain search
  end
  local i = #id
  local b = string.byte(id, i)
  if not b or b < 48 or b > 57 then
    return false
  end
  repeat -- back over the trailing digits
    i = i - 1
    b = string.byte(id, i)
  until not b or b < 48 or b > 57
  return b == OCC_MARK_BYTE and i > 1 -- the mark, after a schedule id
end

-- fileNew files job id of topic h, record v in state st due at t, unless
-- a job of that id exists: written is the caller's jobs written (a
-- record) or deleted (false) in this call, or nil; put, when given, writes
-- v with the caller's batch, else HSET does. The wheel and listing entries
-- are written by the caller's wheelFlush and indexFlush. It reports
-- whether it filed the job. exists, when given, says whether the pool
-- held the job as the call began (the caller read it with others').
local function fileNew(pool, h, id, v, st, t, now, put, written, exists)
  local field = h .. '/' .. id
  local w = written and written[field]
  if w == nil and exists == nil then
    exists = redis.call('HEXISTS', pool, field) == 1
  end
  if w or (w == nil and exists) then
    return false
  end
  if put then
    put(field, v)
  else
    redis.call('HSET', pool, field, v)
  end
  wheelPut(field, t, now)
  indexAdd(h, id, now)
  local ls = select(8, (structLib or findStruct()).unpack(REC, v))
  if ls >= 10 then -- an occurrence of a labelled schedule
    labelAdd(string.sub(pool, 1, -5), h, id, now, v, REC_LEN, ls)
  end
  count(h, NAME[st])
  return true
end

-- occur files schedule s's occurrence at t as a new job of topic h,
-- unless a job of that id exists (a trigger at the same ms). A cancelled
-- occurrence of that instant, kept for the retention period, makes way: a
-- put or resume files its instant again, and the schedule chains from the
-- new one.
local function occur(pool, h, sid, s, t, now)
  local id = occurrenceID(sid, t)
  local field = h .. '/' .. id
  local old = parse(redis.call('HGET', pool, field))
  if old and old.st == ST.cancelled then
    local tag = string.sub(pool, 1, -5)
    unindex(tag, h, id, old.ca)
    labelRemRecord(tag, h, id, old)
    redis.call('HDEL', pool, field)
    old = nil
  end
  local st = waiting(t, now)
  local v = newRecord(st, now, t, s.lt, s.ls, occurrenceBody(s))
  fileNew(pool, h, id, v, st, t, now, nil, nil, old ~= nil)
end

-- skipPending moves a schedule past job id of topic h (record r), when
-- that is the schedule's pending occurrence, without firing it: the next
-- instant becomes the pending one, filed now (a cancel or reschedule of
-- the pending occurrence would otherwise leave the schedule with no
-- occurrence to chain from). scheds and refills are the shard's schedules
-- and refill set.
local function skipPending(tag, pool, scheds, refills, h, id, r, now)
  local sid = nil
  if r.n == 0 then
    sid = scheduleOf(id)
  end
  if not sid then
    return -- no occurrence, or one that has fired
  end
  local sf = h .. '/' .. sid
  local s = sget(scheds, tag, sf)
  if not s or s.cur ~= r.ra then
    return -- not the pending one: a trigger, or one the schedule passed
  end
  s.cur = qpop(s) or 0
  if done(s) then
    s.cur = 0 -- max_runs reached: nothing more fires
  end
  if s.cur ~= 0 then
    occur(pool, h, sid, s, s.cur, now)
  end
  askRefill(refills, s)
  sput(scheds, s)
end

-- unoccur removes schedule sid's occurrence at t if it has not fired yet;
-- one being delivered or retried is left to finish.
local function unoccur(tag, pool, h, sid, t)
  local id = occurrenceID(sid, t)
  local field = h .. '/' .. id
  local r = parse(redis.call('HGET', pool, field))
  if not r or r.n > 0 or (r.st ~= ST.scheduled and r.st ~= ST.ready) then
    return
  end
  unindex(tag, h, id, r.ca)
  labelRemRecord(tag, h, id, r)
  redis.call('HDEL', pool, field)
  count(h, NAME[r.st], -1)
end
