-- claim.lua: hand out a shard's due jobs: start an attempt on each and push
-- it onto its topic's ready list in the shard, where workers pop it.
-- KEYS[1] the shard's pool, KEYS[2] the shard's wheel (due), KEYS[3] its
-- schedules, KEYS[4] its refill set, KEYS[5] its park set (paused topics),
-- KEYS[6] its leases, KEYS[7] its pop leases
-- ARGV[1] now (ms), or '' to read Redis's TIME (a claim must never trust
-- another machine's clock), ARGV[2] the shard's key tag, ARGV[3] how far
-- ahead to claim (ms), ARGV[4] most jobs to claim (0 claims nothing),
-- ARGV[5] lease margin (ms): added to a job's due time and lease timeout
-- to make its lease, ARGV[6] the lease timeout of a job that records none
-- (ms), ARGV[7] the pop lease (ms)
-- A claimed job becomes active in attempt n+1 and is pushed (LPUSH, so the
-- oldest due pops first from the right) onto <tag>r:<h> as
-- "<due>,<claimed at>,<id>|<record>" (times in ms, base 36): the worker
-- that pops it has all it needs, and holds it until its due time, counted
-- from the claim's time, which the pop follows. Until a worker starts it
-- (start.lua, right after its pop) it is under a pop lease: an entry
-- "<h>/<id>,<attempt>" of <tag>lq scored by its due time plus the pop
-- lease. Started, it is under its lease: an entry of <tag>l scored by its
-- record's next time (due + callback timeout + margin), which the
-- attempt's outcome removes (outcome.lua).
-- First, pop leases that lapsed (a pop whose reply was lost, or no worker
-- took the job in time) push their jobs again, in the same attempt: start
-- lets one pop of an attempt start it. Then leases that lapsed (their
-- worker died or lost Redis) are claimed again, the lost attempt logged. Then the wheel's slots due by now + ahead,
-- oldest first: a wide slot is cascaded into narrower ones; a level-0
-- slot's live entries are claimed (a scheduled or retrying job starts an
-- attempt; an active one whose lease entry sits in the wheel, as layout 5
-- filed them, is a lapsed lease; a delivered one whose record expired is
-- dropped with its listing entry). Jobs due later than now are claimed
-- ahead.
-- Wheel slots are lists of "<h>/<id>,<offset>" entries, popped as they
-- are processed.
-- A job of a paused topic (in the shard's park set) is not claimed: its
-- wheel entry moves, as it is, to the topic's parked list (it is parked), and the job keeps
-- its state, due time and attempts until resume files it again; one whose
-- lease lapsed becomes retrying first.
-- Claiming a schedule's pending occurrence files the schedule's next one
-- (chain), and applies its catch-up setting to the instants missed. The
-- occurrences of a slot are started after its other jobs, with one read of
-- their schedules' headers; the occurrences they file are looked up in one
-- read a pass, and the headers written in one HSET as the call ends. The
-- next occurrence takes its body from the one firing, which was filed from
-- the schedule's body as it is (the body hash is read only when the firing
-- one carries an attempt log, as a replayed one does).
-- Reply: {claimed, next, now, end, refills, handles, active, skipped}: claimed is how many
-- jobs were pushed; next the earliest score left in the wheel or the lease
-- set (false when both are empty); now the time used and end Redis's time
-- as the call ends (ms, with microseconds); refills how many schedules of
-- the shard wait for more instants; handles the topics whose ready lists
-- got jobs; active how many attempts are under lease; skipped the instants
-- overlap skipped in this call, as topic handle, count pairs.
local pool, due, tag = KEYS[1], KEYS[2], ARGV[2]
local now, nowStr = clock(ARGV[1])
local upTo = now + tonumber(ARGV[3])
local budget = tonumber(ARGV[4])
local cascades = 8 * budget
local chores = CHORES_MAX -- entries that start no attempt (layout.go, maxChores)
local margin, defaultLease = tonumber(ARGV[5]), tonumber(ARGV[6])
local leases, popLeases, popLease = KEYS[6], KEYS[7], tonumber(ARGV[7])
local written, hset, hdel = {}, {}, {}
local leaseAdd = {} -- score, member pairs for the pop lease set
local ready, readyOrder, claimed = {}, {}, 0 -- entries to push, by topic handle
local nowB36 = b36(now)

-- keepRaw queues v as field's record, to be written with the call's HSET;
-- keep does the same with a record table.
local function keepRaw(field, v)
  written[field] = v
  hset[#hset + 1] = field
  hset[#hset + 1] = v
  return v
end

local function keep(field, r)
  return keepRaw(field, format(r))
end

-- Schedules chained in this call. Their headers are read once for a
-- slot's occurrences (claimChained) and kept in sobj (false: no such
-- schedule), and those changed are written once as the call ends
-- (schedFlush); the occurrences chains file wait (occ*, nOcc of them)
-- until occurFlush looks up, in one read, whether a job holds their ids.
-- Lists are kept in arrays reused through the call, not a table an entry:
-- each table Lua makes is an allocation its collector pays for again.
local sobj, schanged = {}, {}
-- skips counts the instants gate skipped, by topic handle, for the reply:
-- the scanner turns them into its metric.
local skips = {}
local occH, occID, occF, occSt, occT, occV, nOcc = {}, {}, {}, {}, {}, {}, 0

-- occurLater queues schedule s's occurrence at t, for occurFlush to file.
local function occurLater(h, sid, s, t)
  local st = waiting(t, now)
  local id = occurrenceID(sid, t)
  nOcc = nOcc + 1
  occH[nOcc], occID[nOcc], occF[nOcc], occSt[nOcc], occT[nOcc] = h, id, h .. '/' .. id, st, t
  occV[nOcc] = newRecord(st, now, t, s.lt, s.ls, occurrenceBody(s))
end

-- occurFlush files the occurrences queued, each unless a job of its id
-- exists: a trigger steps off its pattern's instants, but not off those of
-- a pattern put after it.
local function occurFlush()
  for at = 1, nOcc, 1000 do
    local last = math.min(at + 999, nOcc)
    local ex = redis.call('HMGET', pool, unpack(occF, at, last))
    for i = at, last do
      fileNew(pool, occH[i], occID[i], occV[i], occSt[i], occT[i], now, keepRaw, written, ex[i - at + 1] ~= false)
    end
  end
  nOcc = 0
end

-- schedFlush writes the headers of the schedules chained in this call.
local function schedFlush()
  local hs = {}
  for _, s in ipairs(schanged) do
    hs[#hs + 1] = s.sf
    hs[#hs + 1] = sformat(s)
  end
  callMany('HSET', KEYS[3], hs)
end

-- occurrenceState returns the state of schedule sid's occurrence at t
-- (topic h) as this call sees it, or nil when there is none.
local function occurrenceState(h, sid, t)
  local field = h .. '/' .. occurrenceID(sid, t)
  local v = written[field]
  if v == nil then
    v = redis.call('HGET', KEYS[1], field)
  end
  if not v then
    return nil, nil
  end
  local r = parse(v)
  return r.st, r
end

-- gate applies schedule s's extension (overlap, max_runs) to its
-- occurrence r of topic h about to fire; pattern is true for an instant of
-- the pattern (the pending occurrence, or the one buffer_one holds back),
-- the ones overlap applies to. It answers nil when r fires (counted),
-- 'drop' when it must not (max_runs reached, or skipped) and 'wait' when
-- buffer_one holds it back.
local function gate(h, sid, s, r, pattern)
  local x = s.x
  if done(s) then
    return 'drop'
  end
  if pattern and x.ov ~= 'a' then
    local busy = false
    if x.bw ~= 0 and x.bw ~= r.ra then
      local st, w = occurrenceState(h, sid, x.bw)
      busy = (st == ST.scheduled or st == ST.ready) and w.ra == x.bw and fresh(w)
      if not busy then
        x.bw = 0 -- it fired, or was cancelled or rescheduled
      end
    end
    if not busy and x.lo ~= 0 and x.lo ~= r.ra then
      local st = occurrenceState(h, sid, x.lo)
      busy = st == ST.active or st == ST.retrying
    end
    if busy then
      if x.ov == 'b' and (x.bw == 0 or x.bw == r.ra) then
        x.bw = r.ra
        return 'wait'
      end
      x.sk = x.sk + 1
      count(h, OCC_SKIPPED)
      skips[h] = (skips[h] or 0) + 1
      return 'drop'
    end
  end
  if x.bw == r.ra then
    x.bw = 0
  end
  x.rn = x.rn + 1
  x.lo = r.ra
  return nil
end

-- changed marks schedule s to be written as the call ends.
local function changed(s)
  if not s.changed then
    s.changed = true
    schanged[#schanged + 1] = s
  end
end

-- chain is called as schedule sid's occurrence r (of topic h; sf is the
-- schedule's field) is claimed for its first attempt: when it is the
-- schedule's pending one, the next instant becomes pending, in this call.
-- Instants that passed meanwhile (all kairos down) are missed: catch-up
-- "all" fires each, "one" lets this occurrence stand for them, "none"
-- drops them and this one too when it is itself missed. A schedule with
-- an extension gates each occurrence that is not a replay (gate). It
-- answers nil when r fires, 'drop' when it must not, and 'wait' when it
-- waits for the previous occurrence to end.
local function chain(h, sid, sf, r)
  local s = sobj[sf] -- read by claimChained
  if not s or s.cur ~= r.ra then
    -- a trigger, a backfill, one buffer_one holds back, or the schedule changed
    if s and s.x and r.ll == 0 then
      local buffered = s.x.bw == r.ra
      local verdict = gate(h, sid, s, r, buffered)
      if buffered and not verdict and r.ra > s.lf then
        s.lf = r.ra
      end
      changed(s)
      return verdict
    end
    return nil
  end
  if not s.ob and r.ll == 0 and r.ls == s.ls then
    -- the pending occurrence was filed from the schedule's body as it is
    -- (a put files a new one): the next takes its body from this one's,
    -- which the claim read anyway, and not from the body hash
    s.ob = bodyOf(r)
  end
  local missed = nil -- rare: made when an instant was missed
  local first = qfirst(s)
  while first and first <= now do
    missed = missed or {}
    missed[#missed + 1] = first
    qdrop(s)
    first = qfirst(s)
  end
  local verdict = nil
  if s.cu == CU.none and (missed ~= nil or now - r.ra > MISFIRE_GRACE) then
    verdict = 'drop'
  elseif s.x and r.ll == 0 then
    verdict = gate(h, sid, s, r, true)
  end
  local stop = s.x and done(s) -- max_runs: nothing more is filed
  if missed and s.cu == CU.all and not stop then
    for i = 1, math.min(#missed, CATCHUP_MAX) do
      occurLater(h, sid, s, missed[i])
    end
  end
  if not verdict then
    s.lf = r.ra
  end
  s.cur = 0
  if first and not stop then
    s.cur = first
    qdrop(s)
    occurLater(h, sid, s, s.cur)
  end
  askRefill(KEYS[4], s)
  changed(s)
  return verdict
end

-- parked reports whether topic h is paused (the shard's park set, read once
-- a call, when a job of it would start an attempt).
local parking = nil
local function parked(h)
  if not parking then
    parking = {}
    for _, x in ipairs(redis.call('SMEMBERS', KEYS[5])) do
      parking[x] = true
    end
  end
  return parking[h]
end

-- park keeps field's wheel entry at t in topic h's parked list instead of
-- claiming it (written by parkFlush); resume files it again (unpark.lua).
local parkedEntries = {}
local function park(h, field, t)
  local es = parkedEntries[h]
  if not es then
    es = {}
    parkedEntries[h] = es
  end
  es[#es + 1] = field .. ',' .. b36(t)
  budget = budget - 1 -- work done, though no job is claimed
end

local function parkFlush()
  for h, es in pairs(parkedEntries) do
    callMany('RPUSH', tag .. KEY.parked .. h, es)
  end
end

-- push puts attempt n of job id of topic h (field, record v) due at dueAt
-- on its topic's ready list, under a pop lease whose member names the
-- entry: "<h>/<id>,<attempt>,<due>,<claimed at>".
local function push(field, h, id, n, dueAt, v)
  local hi, lo = b36Split(dueAt)
  local head = hi .. lo .. ',' .. nowB36
  leaseAdd[#leaseAdd + 1] = math.max(dueAt, now) + popLease
  leaseAdd[#leaseAdd + 1] = field .. ',' .. b36(n) .. ',' .. head
  local es = ready[h]
  if not es then
    es = {}
    ready[h] = es
    readyOrder[#readyOrder + 1] = h
  end
  es[#es + 1] = head .. ',' .. id .. '|' .. v
  claimed = claimed + 1
end

-- start starts attempt n+1 of job id of topic h (field, record r) due
-- at dueAt: it becomes active under a lease, and goes onto its topic's
-- ready list.
local function start(field, h, id, r, dueAt)
  r.st, r.n = ST.active, r.n + 1
  local lt = r.lt
  if lt == 0 then
    lt = defaultLease
  end
  r.nx = dueAt + lt + margin
  push(field, h, id, r.n, dueAt, keep(field, r))
  budget = budget - 1
end

-- A slot's occurrences that fire are set aside by claim (later*, nLater
-- of them) and started by claimChained once the rest of the slot is done,
-- with their schedules' headers read in one call; laterField marks their
-- fields, so that another entry of one in the slot is seen as stale, as it
-- would be once the occurrence started.
local laterF, laterR, laterH, laterID, laterSid, laterDue, nLater = {}, {}, {}, {}, {}, {}, 0
local laterSf = {} -- "<h>/<sid>": the schedule's field, made once an occurrence
local laterField = {}

-- claim processes field's entry at time t; v is its record as read before
-- this call wrote any.
local function claim(field, t, v)
  if written[field] ~= nil then
    v = written[field]
  end
  local st, n, ca, ra, nx, fa, lt, ls, ll
  if v then
    st, n, ca, ra, nx, fa, lt, ls, ll = (structLib or findStruct()).unpack(REC, v)
  end
  if nx ~= t or st == ST.dead or laterField[field] then
    chores = chores - 1
    return -- a stale entry (cancelled, rescheduled or finished since), or a dead job's lease
  end
  local h, id = string.match(field, '^([^/]*)/(.*)$')
  if st == ST.delivered or st == ST.expired or st == ST.cancelled then -- its record's expiry (its slot is processed whole, up to a slot early)
    chores = chores - 1
    hdel[#hdel + 1] = field
    written[field] = false -- gone
    unindex(tag, h, id, ca)
    if ls >= 10 then
      labelRem(tag, h, id, v, REC_LEN, ls)
    end
    return
  end
  local r = asRecord(v, st, n, ca, ra, nx, fa, lt, ls, ll)
  local dueAt = math.max(t, now)
  if r.st == ST.active then
    addLog(r, string.format('{"n":%d,"t":%d,"error":"worker lost: its lease expired before the attempt finished"}\n', r.n, now))
    if parked(h) then -- its next attempt waits for the topic's resume
      r.st = ST.retrying
      count(h, 'active>retrying')
      keep(field, r)
      park(h, field, t)
      return
    end
    dueAt = now
  elseif parked(h) then -- the topic is paused: the job is parked, as it is, until resume
    park(h, field, t)
    return
  else
    local sid = nil
    if fresh(r) then
      sid = scheduleOf(id) -- an occurrence's first attempt (since a replay): it fires
    end
    if sid then
      nLater = nLater + 1
      laterF[nLater], laterR[nLater], laterH[nLater], laterID[nLater], laterSid[nLater], laterDue[nLater] =
        field, r, h, id, sid, dueAt
      laterField[field] = true
      return
    end
    count(h, TO_ACTIVE[false][r.st])
  end
  start(field, h, id, r, dueAt)
end

-- claimChained starts the occurrences claim set aside, each chaining its
-- schedule's next one, unless catch-up "none" drops it.
local function claimChained()
  if nLater == 0 then
    return
  end
  local sfs, seen = {}, {}
  for i = 1, nLater do
    local sf = laterH[i] .. '/' .. laterSid[i]
    laterSf[i] = sf
    if sobj[sf] == nil and not seen[sf] then
      seen[sf] = true
      sfs[#sfs + 1] = sf
    end
  end
  if #sfs > 0 then
    local hs = redis.call('HMGET', KEYS[3], unpack(sfs))
    for i, sf in ipairs(sfs) do
      sobj[sf] = sparse(hs[i], tag .. KEY.scheduleBodies, sf) or false
    end
  end
  for i = 1, nLater do
    local field, r, h = laterF[i], laterR[i], laterH[i]
    laterField[field] = nil
    local verdict = chain(h, laterSid[i], laterSf[i], r)
    if verdict == 'drop' then
      hdel[#hdel + 1] = field -- missed with catch-up "none", skipped, or past max_runs
      written[field] = false
      unindex(tag, h, laterID[i], r.ca)
      labelRemRecord(tag, h, laterID[i], r)
      count(h, NAME[r.st], -1)
    elseif verdict == 'wait' then
      -- buffer_one: it looks again later, as it is (its state and run_at)
      r.nx = now + math.max(BUFFER_POLL, tonumber(ARGV[3]) + WHEEL[1])
      keep(field, r)
      wheelPut(field, r.nx, now)
      chores = chores - 1
    else
      count(h, TO_ACTIVE[true][r.st])
      start(field, h, laterID[i], r, laterDue[i])
    end
  end
  nLater = 0
end

-- pop leases that lapsed: each is taken out; a job still active in that
-- attempt whose entry still waits on its ready list (no worker had room
-- for it) keeps waiting under a new pop lease, and one whose entry is gone
-- (a pop whose reply was lost, or a worker that died before it started
-- the job) is pushed again, in the same attempt
if budget > 0 then
  local lapsed = redis.call('ZRANGEBYSCORE', popLeases, '-inf', now, 'LIMIT', 0, math.min(budget, chores))
  if #lapsed > 0 then
    local fields, ns, dues, ats = {}, {}, {}, {}
    for i, m in ipairs(lapsed) do
      local f, n, due, at = string.match(m, '^(.*),(%w+),(%w+),(%w+)$')
      fields[i], ns[i], dues[i], ats[i] = f or '', num(n or '0'), due or '0', at or '0'
    end
    callMany('ZREM', popLeases, lapsed)
    local vs = redis.call('HMGET', pool, unpack(fields))
    for i, field in ipairs(fields) do
      local v = written[field]
      if v == nil then
        v = vs[i]
      end
      local r = parse(v)
      if r and r.st == ST.active and r.n == ns[i] then
        local h, id = string.match(field, '^([^/]*)/(.*)$')
        local entry = dues[i] .. ',' .. ats[i] .. ',' .. id .. '|' .. v
        if redis.call('LPOS', tag .. KEY.ready .. h, entry, 'RANK', -1, 'MAXLEN', READY_LOOK) then
          leaseAdd[#leaseAdd + 1] = now + popLease
          leaseAdd[#leaseAdd + 1] = lapsed[i]
          chores = chores - 1
        else
          push(field, h, id, r.n, num(dues[i]), v)
          budget = budget - 1
        end
      else
        chores = chores - 1
      end
    end
  end
end

-- leases that lapsed: each entry is taken out, and its job, when still
-- active in that lease, starts its next attempt (claim logs the lost one)
if budget > 0 then
  local lapsed = redis.call('ZRANGEBYSCORE', leases, '-inf', now, 'WITHSCORES', 'LIMIT', 0, math.min(budget, chores))
  if #lapsed > 0 then
    local fields, times = {}, {}
    for i = 1, #lapsed, 2 do
      fields[#fields + 1], times[#times + 1] = lapsed[i], tonumber(lapsed[i + 1])
    end
    callMany('ZREM', leases, fields)
    local vs = redis.call('HMGET', pool, unpack(fields))
    for i, field in ipairs(fields) do
      claim(field, times[i], vs[i])
    end
  end
end

while budget > 0 and cascades > 0 and chores > 0 do
  local slots = redis.call('ZRANGEBYSCORE', due, '-inf', upTo, 'LIMIT', 0, 8)
  if #slots == 0 then
    break
  end
  for _, m in ipairs(slots) do
    local key = tag .. KEY.wheelSlot .. m
    local level = tonumber(string.sub(m, 1, 1)) + 1
    local start = num(string.sub(m, 3)) * WHEEL[level]
    local take = math.min(budget, chores)
    if level > 1 then
      take = cascades
    end
    local es = redis.call('LPOP', key, take) or {}
    local fields, times = {}, {}
    for i, e in ipairs(es) do
      local field, off = string.match(e, '^(.*),(%w*)$')
      fields[i], times[i] = field, start + num(off)
    end
    if level > 1 then
      for i, field in ipairs(fields) do
        wheelPutAt(field, times[i], level - 1)
      end
      cascades = cascades - #fields
    elseif #fields > 0 then
      local vs = redis.call('HMGET', pool, unpack(fields)) -- one read for the slot's jobs
      for i, field in ipairs(fields) do
        claim(field, times[i], vs[i])
      end
      claimChained()
    end
    if #es < take then -- the slot is empty (and its key gone)
      redis.call('ZREM', due, m)
    end
    if budget <= 0 or cascades <= 0 or chores <= 0 then
      break
    end
  end
  -- cascaded entries and occurrences filed may be due already: write
  -- them before looking again
  occurFlush()
  wheelFlush(tag, due)
end
occurFlush()
schedFlush()
callMany('HSET', pool, hset)
callMany('HDEL', pool, hdel)
parkFlush()
wheelFlush(tag, due)
indexFlush(tag)
countFlush(tag)
callMany('ZADD', popLeases, leaseAdd)
local handles = {}
for _, h in ipairs(readyOrder) do
  callMany('LPUSH', tag .. KEY.ready .. h, ready[h])
  handles[#handles + 1] = h
end
local next = false
local first = redis.call('ZRANGE', due, 0, 0, 'WITHSCORES')
if first[2] then
  next = tonumber(first[2])
end
for _, set in ipairs({leases, popLeases}) do
  first = redis.call('ZRANGE', set, 0, 0, 'WITHSCORES')
  if first[2] and (not next or tonumber(first[2]) < next) then
    next = tonumber(first[2])
  end
end
if next then
  next = string.format('%d', next)
end
-- Redis's clock as the call ends
local _, endStr = clock(ARGV[1])
local skipped = {}
for h, n in pairs(skips) do
  skipped[#skipped + 1] = h
  skipped[#skipped + 1] = n
end
return {claimed, next, nowStr, endStr, redis.call('SCARD', KEYS[4]), handles, redis.call('ZCARD', leases) + redis.call('ZCARD', popLeases), skipped}
