-- claim.lua: hand out a shard's due jobs and start an attempt on each.
-- KEYS[1] the shard's pool, KEYS[2] the shard's wheel (due), KEYS[3] its
-- schedules, KEYS[4] its refill set, KEYS[5] its hold set (paused topics)
-- ARGV[1] now (ms), or '' to read Redis's TIME (a claim must never trust
-- another machine's clock), ARGV[2] the shard's key tag, ARGV[3] how far
-- ahead to claim (ms), ARGV[4] most jobs to claim, ARGV[5] lease margin
-- (ms): added to a job's due time and lease timeout to make its lease,
-- ARGV[6] the lease timeout of a job that records none (ms), ARGV[7] how
-- long a delivered job stays readable (ms), ARGV[8] most outcomes to record,
-- ARGV[9] the claim's token ('' for none), ARGV[10] how long a token is
-- remembered (ms), ARGV[11] '1' when the call may repeat an earlier one of
-- the same token (the caller lost that one's reply)
-- A claim with a token is done once: the first call of a token that claims
-- jobs remembers them under it (<tag>ct:<token>), and a later call of the
-- same token (a retry after a lost reply, or the lost call itself run late)
-- claims nothing new and hands out again those of its jobs still active
-- in the attempt it started. A repeat that finds no token remembers an
-- empty one, so that the lost call, run after it, claims nothing.
-- First it records the outcomes workers appended to the shard's outcome list
-- (<tag>o, see Store.Finish): each "<h>/<id>,<attempt>,<outcome>,<retry
-- at>,<tenant>|<log line>". An outcome changes its job only while the job
-- is active in that attempt: a stale one (its lease lapsed and the job was
-- handed out again) changes nothing. Recording them here, before the wheel,
-- means a lease entry is never read before its job's outcome, and a call
-- records many outcomes at once. A dead outcome may carry the job's
-- failure notification, filed then as a job of its own (notify).
-- It processes the wheel's slots due by now + ahead, oldest first. A wide
-- slot is cascaded into narrower ones; a level-0 slot's live entries are
-- claimed: a scheduled or retrying job gets attempt n+1, state active and a
-- lease (an entry at its expiry); an active one whose lease lapsed gets the
-- same, with the lost attempt logged; a delivered one whose record expired
-- is dropped with its listing entry (a delivered outcome files that
-- expiry). Jobs due later than now are claimed ahead: the caller holds them
-- until their due time.
-- Wheel slots are lists of "<h>/<id>,<offset>" entries, popped as they
-- are processed.
-- A job of a paused topic (in the shard's hold set) is not claimed: its
-- wheel entry moves, as it is, to the topic's held list, and the job keeps
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
-- Reply: {claimed, next, now, end, refills}: claimed is a flat list field, record, due
-- (ms) for each job claimed; next is the score of the earliest slot left
-- (false when the wheel is empty); now is the time used and end Redis's
-- time as the call ends (ms, with microseconds); refills is how many
-- schedules of the shard wait for more instants.
local pool, due, tag = KEYS[1], KEYS[2], ARGV[2]
local now, nowStr = clock(ARGV[1])
local upTo = now + tonumber(ARGV[3])
local budget = tonumber(ARGV[4])
local cascades = 8 * budget
local chores = CHORES_MAX -- entries that start no attempt (layout.go, maxChores)
local margin, defaultLease, retention = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local out, written, hset, hdel = {}, {}, {}, {}
local claimed = {} -- "<field>,<attempt>,<due>\n" (base 36) of each job claimed, for the token, in pieces

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

-- notify files the failure notification of job id of topic h, dead after
-- attempt n: a job "<id>~dead.<n>" due now, whose settings and payload
-- the worker wrote in the outcome ("<settings length>|<settings><payload>").
local function notify(h, id, n, note)
  local ls, body = string.match(note, '^(%d+)|(.*)$')
  if ls then
    fileNew(pool, h, id .. '~dead.' .. string.format('%d', n), newRecord(ST.ready, now, now, 0, tonumber(ls), body),
      ST.ready, now, now, keepRaw, written)
  end
end

-- record applies the outcomes on the shard's outcome list.
local function record()
  local os = redis.call('LPOP', tag .. 'o', tonumber(ARGV[8]))
  if not os then
    return
  end
  -- one pattern an outcome, its parts kept in arrays: each string and
  -- table Lua makes is an allocation, and a claim records hundreds
  local fields, ns, ocs, ats, tenants, lines, notes = {}, {}, {}, {}, {}, {}, {}
  for i, o in ipairs(os) do
    -- the log line ends with a newline; a failure notice may follow it
    local f, n, oc, at, tenant, line, note = string.match(o, '^([^,|]*),(%w*),(%d),(%w*),([^|]*)|([^\n]*\n)(.*)$')
    if not f then
      f, n, oc, at, tenant, line = string.match(o, '^([^,|]*),(%w*),(%d),(%w*),([^|]*)|(.*)$')
    end
    fields[i], ns[i], ocs[i], ats[i], tenants[i], lines[i], notes[i] = f, n, oc, at, tenant, line, note
  end
  local vs = redis.call('HMGET', pool, unpack(fields))
  for i, field in ipairs(fields) do
    local v = written[field]
    if v == nil then
      v = vs[i]
    end
    local r = parse(v)
    if r and r.st == ST.active and r.n == num(ns[i]) then
      local h, id = string.match(field, '^([^/]*)/(.*)$')
      local oc = tonumber(ocs[i])
      addLog(r, lines[i])
      if oc == OUT.delivered then
        -- the record's expiry is filed now: the lease's entry becomes
        -- stale, skipped on its header alone
        r.st, r.fa, r.nx = ST.delivered, now, now + retention
        wheelPut(field, r.nx, now)
        count(h, TO_DELIVERED[isOccurrence(id)])
      elseif oc == OUT.retrying then
        r.st, r.nx = ST.retrying, num(ats[i])
        wheelPut(field, r.nx, now)
        count(h, 'active>retrying')
      else
        r.st, r.fa = ST.dead, now
        deadAdd(tag, tenants[i], h, id, now)
        count(h, TO_DEAD[isOccurrence(id)])
        if notes[i] and notes[i] ~= '' then
          notify(h, id, r.n, notes[i])
        end
      end
      keep(field, r)
    end
  end
end
record()
wheelFlush(tag, due) -- retries may be due already

-- a token already used: hand out again its jobs still in the attempt it
-- started, and claim nothing more
local tokenKey, repeated = nil, false
if ARGV[9] ~= '' then
  tokenKey = tag .. 'ct:' .. ARGV[9]
  local prev = redis.call('GET', tokenKey)
  if prev then
    repeated, budget = true, 0
    local fields, parts = {}, {}
    for e in string.gmatch(prev, '[^\n]+') do
      local f, n, at = string.match(e, '^(.*),(%w+),(%w+)$')
      local i = #fields + 1
      fields[i], parts[i] = f, {n = num(n), at = num(at)}
    end
    if #fields > 0 then
      local vs = redis.call('HMGET', pool, unpack(fields))
      for i, f in ipairs(fields) do
        local v = written[f]
        if v == nil then
          v = vs[i]
        end
        local r = parse(v)
        if r and r.st == ST.active and r.n == parts[i].n then
          -- handed out again now: its lease runs from now, or (a lost
          -- reply outlasting it) a claim would hand it out once more
          local lt = r.lt
          if lt == 0 then
            lt = defaultLease
          end
          if now + lt + margin > r.nx then
            r.nx = now + lt + margin
            wheelPut(f, r.nx, now)
            v = keep(f, r)
          end
          out[#out + 1] = f
          out[#out + 1] = v
          out[#out + 1] = parts[i].at
        end
      end
    end
  end
end

-- Schedules chained in this call. Their headers are read once for a
-- slot's occurrences (claimChained) and kept in sobj (false: no such
-- schedule), and those changed are written once as the call ends
-- (schedFlush); the occurrences chains file wait (occ*, nOcc of them)
-- until occurFlush looks up, in one read, whether a job holds their ids.
-- Lists are kept in arrays reused through the call, not a table an entry:
-- each table Lua makes is an allocation its collector pays for again.
local sobj, schanged = {}, {}
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

-- chain is called as schedule sid's occurrence r (of topic h; sf is the
-- schedule's field) is claimed for its first attempt: when it is the
-- schedule's pending one, the next instant becomes pending, in this call.
-- Instants that passed meanwhile (all kairos down) are missed: catch-up
-- "all" fires each, "one" lets this occurrence stand for them, "none"
-- drops them and this one too when it is itself missed. It returns true
-- when r must not fire.
local function chain(h, sid, sf, r)
  local s = sobj[sf] -- read by claimChained
  if not s or s.cur ~= r.ra then
    return false -- a trigger, or the schedule changed
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
  local skip = s.cu == 'n' and (missed ~= nil or now - r.ra > MISFIRE_GRACE)
  if missed and s.cu == 'a' then
    for i = 1, math.min(#missed, CATCHUP_MAX) do
      occurLater(h, sid, s, missed[i])
    end
  end
  if not skip then
    s.lf = r.ra
  end
  s.cur = 0
  if first then
    s.cur = first
    qdrop(s)
    occurLater(h, sid, s, s.cur)
  end
  askRefill(KEYS[4], s)
  if not s.changed then
    s.changed = true
    schanged[#schanged + 1] = s
  end
  return skip
end

-- held reports whether topic h is paused (the shard's hold set, read once
-- a call, when a job of it would start an attempt).
local holds = nil
local function held(h)
  if not holds then
    holds = {}
    for _, x in ipairs(redis.call('SMEMBERS', KEYS[5])) do
      holds[x] = true
    end
  end
  return holds[h]
end

-- holdPut keeps field's wheel entry at t in topic h's held list instead of
-- claiming it (written by holdFlush); resume files it again (unhold.lua).
local heldEntries = {}
local function holdPut(h, field, t)
  local es = heldEntries[h]
  if not es then
    es = {}
    heldEntries[h] = es
  end
  es[#es + 1] = field .. ',' .. b36(t)
  budget = budget - 1 -- work done, though no job is claimed
end

local function holdFlush()
  for h, es in pairs(heldEntries) do
    callMany('RPUSH', tag .. 'held:' .. h, es)
  end
end

-- start starts attempt n+1 of job field (record r) due at dueAt: it
-- becomes active under a lease, and is handed out.
local function start(field, r, dueAt)
  r.st, r.n = ST.active, r.n + 1
  local lt = r.lt
  if lt == 0 then
    lt = defaultLease
  end
  r.nx = dueAt + lt + margin
  wheelPut(field, r.nx, now)
  out[#out + 1] = field
  out[#out + 1] = keep(field, r)
  out[#out + 1] = dueAt
  if tokenKey then
    local k, hi, lo = #claimed, b36Split(dueAt)
    claimed[k + 1], claimed[k + 2], claimed[k + 3], claimed[k + 4], claimed[k + 5], claimed[k + 6], claimed[k + 7] =
      field, ',', b36(r.n), ',', hi, lo, '\n'
  end
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
  if st == ST.delivered then -- its record's expiry (its slot is processed whole, up to a slot early)
    chores = chores - 1
    hdel[#hdel + 1] = field
    written[field] = false -- gone
    unindex(tag, h, id, ca)
    return
  end
  local r = asRecord(v, st, n, ca, ra, nx, fa, lt, ls, ll)
  local dueAt = math.max(t, now)
  if r.st == ST.active then
    addLog(r, string.format('{"n":%d,"t":%d,"error":"worker lost: its lease expired before the attempt finished"}\n', r.n, now))
    if held(h) then -- its next attempt waits for the topic's resume
      r.st = ST.retrying
      count(h, 'active>retrying')
      keep(field, r)
      holdPut(h, field, t)
      return
    end
    dueAt = now
  elseif held(h) then -- the topic is paused: the job waits, as it is, for resume
    holdPut(h, field, t)
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
  start(field, r, dueAt)
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
      sobj[sf] = sparse(hs[i], tag .. 'sb', sf) or false
    end
  end
  for i = 1, nLater do
    local field, r, h = laterF[i], laterR[i], laterH[i]
    laterField[field] = nil
    if chain(h, laterSid[i], laterSf[i], r) then
      hdel[#hdel + 1] = field -- missed, and catch-up "none"
      written[field] = false
      unindex(tag, h, laterID[i], r.ca)
      count(h, NAME[r.st], -1)
    else
      count(h, TO_ACTIVE[true][r.st])
      start(field, r, laterDue[i])
    end
  end
  nLater = 0
end

while budget > 0 and cascades > 0 and chores > 0 do -- a budget of 0 records outcomes only
  local slots = redis.call('ZRANGEBYSCORE', due, '-inf', upTo, 'LIMIT', 0, 8)
  if #slots == 0 then
    break
  end
  for _, m in ipairs(slots) do
    local key = tag .. 'w:' .. m
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
holdFlush()
wheelFlush(tag, due)
indexFlush(tag)
countFlush(tag)
if tokenKey and not repeated and (#claimed > 0 or ARGV[11] == '1') then
  redis.call('SET', tokenKey, table.concat(claimed), 'PX', tonumber(ARGV[10]))
end
local first = redis.call('ZRANGE', due, 0, 0, 'WITHSCORES')
local next = false
if first[2] then
  next = first[2]
end
-- Redis's clock as the call ends: the caller counts claimed jobs' due
-- times from it, so that the time this call took does not make them late
local _, endStr = clock(ARGV[1])
return {out, next, nowStr, endStr, redis.call('SCARD', KEYS[4])}
