-- job.lua: helpers put in front of every script, after the prelude that
-- layout.go generates (ST, R, OUT, REC, LOG_KEEP, WHEEL). A job record is
-- a binary header of fixed width (REC_LEN bytes: st, n, ca, ra, nx, fa,
-- lt, ls, ll, as recordFields in layout.go gives them), then
-- <settings><log><payload>.

-- b36 writes a whole number >= 0 (below 2^53, where doubles stay exact)
-- in base 36; 0 is ''. It works two digits at a time: U[d] and P[d] are
-- the digits of d < 36^2 unpadded and padded to two, made as first needed
-- and kept, so a number of 2k digits costs k lookups and one
-- concatenation: a job's life writes several numbers, and digit by digit
-- cost several times as much inside Redis (docs/performance.md).
local DIGITS = '0123456789abcdefghijklmnopqrstuvwxyz'
local U, P = {[0] = ''}, {}
local function pad2(d)
  local s = P[d]
  if not s then
    local lo = d % 36
    local hi = (d - lo) / 36
    s = string.sub(DIGITS, hi + 1, hi + 1) .. string.sub(DIGITS, lo + 1, lo + 1)
    P[d] = s
  end
  return s
end
local function top2(d)
  local s = U[d]
  if not s then
    s = pad2(d)
    if d < 36 then
      s = string.sub(s, 2)
    end
    U[d] = s
  end
  return s
end
local function b36(n)
  if not n or n <= 0 then
    return ''
  end
  if n < 1296 then
    return top2(n)
  end
  local a = n % 1296
  n = (n - a) / 1296
  if n < 1296 then
    return top2(n) .. pad2(a)
  end
  local b = n % 1296
  n = (n - b) / 1296
  if n < 1296 then
    return top2(n) .. pad2(b) .. pad2(a)
  end
  local c = n % 1296
  n = (n - c) / 1296
  if n < 1296 then
    return top2(n) .. pad2(c) .. pad2(b) .. pad2(a)
  end
  local parts = {pad2(c), pad2(b), pad2(a)}
  while n >= 1296 do
    local d = n % 1296
    n = (n - d) / 1296
    table.insert(parts, 1, pad2(d))
  end
  return top2(n) .. table.concat(parts)
end

-- b36Split returns two strings that join into b36(n) (below 1296, into
-- b36(n) with a leading zero, which reads the same): the digits above the
-- last two, kept from the last call (numbers written one after another,
-- such as the due times of one claim, mostly share them), and the last
-- two. A caller appending to a list that is joined later makes no string a
-- number.
local splitHi, splitHiStr = nil, nil
local function b36Split(n)
  local lo = n % 1296
  local hi = (n - lo) / 1296
  if hi ~= splitHi then
    splitHi, splitHiStr = hi, b36(hi)
  end
  return splitHiStr, pad2(lo)
end

-- callMany runs redis.call(cmd, key, [flag,] args...) in calls of at most
-- MANY_MAX arguments each: Lua's unpack takes at most about 8,000 values,
-- and a script that fails midway keeps what it wrote before (a popped
-- wheel entry, say). MANY_MAX is even, so pairs (HSET, ZADD) stay whole.
local MANY_MAX = 4000
local function callMany(cmd, key, args, flag)
  local n = #args
  for i = 1, n, MANY_MAX do
    local j = math.min(i + MANY_MAX - 1, n)
    if flag then
      redis.call(cmd, key, flag, unpack(args, i, j))
    else
      redis.call(cmd, key, unpack(args, i, j))
    end
  end
end

local function num(s)
  if s == '' then
    return 0
  end
  return tonumber(s, 36)
end

-- structStandIn packs and unpacks as Redis's struct library does the
-- formats the scripts use: big-endian ('>'), 'c<n>' (a string of n
-- bytes) and 'I<n>' (an unsigned integer of n bytes) items.
local function structStandIn()
  local parsed = {}
  local function items(fmt)
    local its = parsed[fmt]
    if not its then
      its = {}
      for kind, n in string.gmatch(fmt, '([cI])(%d+)') do
        its[#its + 1] = {kind, tonumber(n)}
      end
      parsed[fmt] = its
    end
    return its
  end
  local lib = {}
  function lib.pack(fmt, ...)
    local args, out = {...}, {}
    for i, it in ipairs(items(fmt)) do
      local v, n = args[i], it[2]
      if it[1] == 'c' then
        out[i] = string.sub(v, 1, n)
      else
        local bytes = {}
        for k = n, 1, -1 do
          bytes[k] = v % 256
          v = (v - bytes[k]) / 256
        end
        out[i] = string.char(unpack(bytes))
      end
    end
    return table.concat(out)
  end
  function lib.unpack(fmt, s)
    local out, at = {}, 1
    for i, it in ipairs(items(fmt)) do
      local n = it[2]
      if #s < at + n - 1 then
        error('data string too short')
      end
      if it[1] == 'c' then
        out[i] = string.sub(s, at, at + n - 1)
      else
        local v = 0
        for k = at, at + n - 1 do
          v = v * 256 + string.byte(s, k)
        end
        out[i] = v
      end
      at = at + n
    end
    out[#out + 1] = at
    return unpack(out)
  end
  return lib
end

-- structLib is Redis's struct library, looked up at a call's first use of
-- it (findStruct): a function library cannot look for it as it loads, when
-- nothing but redis is reachable. The embedded Redis (miniredis, for
-- trying kairos out) has none, and gets the stand-in.
local structLib = nil
local function findStruct()
  local ok, lib = pcall(function()
    return struct
  end)
  if not ok or not lib then
    lib = structStandIn()
  end
  structLib = lib
  return lib
end

-- A record table holds the header's fields and its body in one of three
-- forms: body (a string), v (the stored value: the body is all of it
-- after the header), or parts (three strings to join: the body as an
-- attempt log line was appended to it). Lua copies and interns every
-- string it makes, so a record is not cut into its body until something
-- needs the body as one string (bodyOf), and format joins header and
-- parts in one concatenation.

-- asRecord is the table of stored record v, whose header fields are given.
local function asRecord(v, st, n, ca, ra, nx, fa, lt, ls, ll)
  return {st = st, n = n, ca = ca, ra = ra, nx = nx, fa = fa, lt = lt, ls = ls, ll = ll, v = v}
end

-- parse returns record v as a table, or nil when v is false: the header's
-- fields, read by one struct.unpack, and v for the body after it.
local function parse(v)
  if not v then
    return nil
  end
  return asRecord(v, (structLib or findStruct()).unpack(REC, v))
end

-- bodyOf returns r's body (settings, log, payload) as one string.
local function bodyOf(r)
  if not r.body then
    if r.parts then
      r.body = r.parts[1] .. r.parts[2] .. r.parts[3]
    else
      r.body = string.sub(r.v, REC_LEN + 1)
    end
    r.parts, r.v = nil, nil
  end
  return r.body
end

local function format(r)
  local head = (structLib or findStruct()).pack(REC, r.st, r.n, r.ca, r.ra, r.nx, r.fa, r.lt, r.ls, r.ll)
  if r.body then
    return head .. r.body
  elseif r.parts then
    return head .. r.parts[1] .. r.parts[2] .. r.parts[3]
  end
  return head .. string.sub(r.v, REC_LEN + 1)
end

-- sourceOf returns a string holding r's body and the offset the body
-- starts after in it.
local function sourceOf(r)
  if r.body or r.parts then
    return bodyOf(r), 0
  end
  return r.v, REC_LEN
end

-- newRecord is the record of a new job in state st, created at ca and due
-- at ra, no attempt yet (nx is ra, no log), of lease timeout lt, whose
-- settings (ls bytes) and payload are body.
local function newRecord(st, ca, ra, lt, ls, body)
  return (structLib or findStruct()).pack(REC, st, 0, ca, ra, ra, 0, lt, ls, 0) .. body
end

-- addLog appends one attempt line (ending in a newline) to r's log and
-- keeps the last LOG_KEEP lines.
local function addLog(r, line)
  local src, at = sourceOf(r)
  local settings = string.sub(src, at + 1, at + r.ls)
  if r.ll == 0 then -- the first attempt: nothing to count or drop
    r.parts = {settings, line, string.sub(src, at + r.ls + 1)}
    r.ll, r.body, r.v = #line, nil, nil
    return
  end
  local log = string.sub(src, at + r.ls + 1, at + r.ls + r.ll) .. line
  local payload = string.sub(src, at + r.ls + r.ll + 1)
  local _, lines = string.gsub(log, '\n', '\n')
  while lines > LOG_KEEP do
    log = string.sub(log, string.find(log, '\n', 1, true) + 1)
    lines = lines - 1
  end
  r.parts = {settings, log, payload}
  r.ll, r.body, r.v = #log, nil, nil
end

-- REPLAY_LINE ends the log line a replay adds (replay.lua).
local REPLAY_LINE = '"event":"replay"}\n'

-- fresh reports whether r has made no attempt since it was created or
-- last replayed: its next claim is its first (for a schedule's
-- occurrence, the one that fires it).
local function fresh(r)
  if r.n == 0 then
    return true
  end
  if r.ll < #REPLAY_LINE then
    return false
  end
  local src, at = sourceOf(r)
  local e = at + r.ls + r.ll
  return string.sub(src, e - #REPLAY_LINE + 1, e) == REPLAY_LINE
end

-- waiting is the state of a job waiting for time t: ready when t has come.
local function waiting(t, now)
  if t <= now then
    return ST.ready
  end
  return ST.scheduled
end

-- The timing wheel (layout.go). Entries put during a call are written at
-- its end by wheelFlush: one APPEND a slot and one ZADD.
local wheel, wheelScore = {}, {}

-- slotScore returns the score that the slot of level (1-based) holding
-- time t is processed at, and the slot's number.
local function slotScore(level, t)
  local w = WHEEL[level]
  local n = math.floor(t / w)
  if level > 1 then
    return n * w - WHEEL[level - 1], n
  end
  return n * w, n
end

-- lastN and lastM are the number and name of the last slot named at each
-- level: entries put one after another mostly share a slot, and naming it
-- costs a base-36 conversion and a string.
local lastN, lastM = {}, {}

local function wheelPutAt(field, t, level)
  local score, n = slotScore(level, t)
  local start = n * WHEEL[level]
  local m = lastM[level]
  if lastN[level] ~= n then
    m = (level - 1) .. ':' .. b36(n)
    lastN[level], lastM[level] = n, m
  end
  local e = wheel[m]
  if not e then
    e = {}
    wheel[m] = e
    wheelScore[m] = score
  end
  e[#e + 1] = field .. ',' .. b36(t - start)
end

-- wheelPut files field at time t in the widest level processed after now;
-- a time less than the second level's width ahead goes to the narrowest
-- level at once, whose slots cost a key each but spare the entry a cascade:
-- a pop, a match and a write again, which made both the create and the
-- claim dearer (BenchmarkJobLifeParts; docs/performance.md).
local function wheelPut(field, t, now)
  if t - now < WHEEL[2] then
    return wheelPutAt(field, t, 1)
  end
  for level = #WHEEL, 2, -1 do
    if slotScore(level, t) > now then
      return wheelPutAt(field, t, level)
    end
  end
  return wheelPutAt(field, t, 1)
end

-- wheelFlush writes the entries put so far, one RPUSH a slot (a slot is a
-- list: listpack nodes grow to fit, where an APPENDed string would keep up
-- to its own length again in spare room); it returns the earliest score
-- among the slots written, or nil.
local function wheelFlush(tag, due)
  local soonest, zadd = nil, {}
  for m, parts in pairs(wheel) do
    callMany('RPUSH', tag .. KEY.wheelSlot .. m, parts)
    zadd[#zadd + 1] = wheelScore[m]
    zadd[#zadd + 1] = m
    if not soonest or wheelScore[m] < soonest then
      soonest = wheelScore[m]
    end
  end
  if #zadd > 0 then
    callMany('ZADD', due, zadd, 'NX')
  end
  wheel, wheelScore = {}, {}
  return soonest
end

-- earliestOf returns soonest when it is the first score of the wheel and
-- no later than horizon: a sleeping scanner must then be woken.
local function earliestOf(due, soonest, horizon)
  if not soonest or soonest > horizon then
    return false
  end
  local first = redis.call('ZRANGE', due, 0, 0, 'WITHSCORES')
  if first[2] and tonumber(first[2]) < soonest then
    return false
  end
  return string.format('%d', soonest)
end

-- Dead letters: a topic's (<tag>d:<h>, ids), and across topics a
-- tenant's (<tag>dt:<tenant>) and every tenant's (<tag>dall), of pool
-- fields; all scored by when the job died.
local function deadAdd(tag, tenant, h, id, at)
  redis.call('ZADD', tag .. KEY.dead .. h, at, id)
  redis.call('ZADD', tag .. KEY.deadTenant .. tenant, at, h .. '/' .. id)
  redis.call('ZADD', tag .. KEY.deadAll, at, h .. '/' .. id)
end

local function deadRemove(tag, tenant, h, id)
  redis.call('ZREM', tag .. KEY.dead .. h, id)
  redis.call('ZREM', tag .. KEY.deadTenant .. tenant, h .. '/' .. id)
  redis.call('ZREM', tag .. KEY.deadAll, h .. '/' .. id)
end

-- Counters: a topic's counts by state in the shard, updated once a call.
-- A move of a schedule's occurrence that counts as an occurrence event has
-- a field of its own, marked OCC (layout.go, "Counters"); these name the
-- fields of such moves by whether the job is an occurrence.
local TO_ACTIVE = {[false] = {[ST.scheduled] = 'scheduled>active', [ST.ready] = 'ready>active',
  [ST.retrying] = 'retrying>active'}, [true] = {[ST.scheduled] = OCC .. 'scheduled>active',
  [ST.ready] = OCC .. 'ready>active', [ST.retrying] = 'retrying>active'}}
local TO_DELIVERED = {[false] = 'active>delivered', [true] = OCC .. 'active>delivered'}
local TO_DEAD = {[false] = 'active>dead', [true] = OCC .. 'active>dead'}
local delta = {}
local function count(h, field, n)
  local d = delta[h]
  if not d then
    d = {}
    delta[h] = d
  end
  d[field] = (d[field] or 0) + (n or 1)
end

-- PENDING are the states a tenant's quota of pending jobs counts.
local PENDING = {[NAME[ST.scheduled]] = 1, [NAME[ST.ready]] = 1, [NAME[ST.active]] = 1, [NAME[ST.retrying]] = 1}

-- pendingOf is how much counter field f, moved by n, changes the pending jobs.
local function pendingOf(f, n)
  if string.sub(f, 1, #OCC) == OCC then
    f = string.sub(f, #OCC + 1)
  end
  local from, to = string.match(f, '^(.-)>(.*)$')
  if from then
    return ((PENDING[to] or 0) - (PENDING[from] or 0)) * n
  end
  return (PENDING[f] or 0) * n
end

-- countFlush writes the call's counts: each topic's counters, and its
-- tenant's pending jobs in the shard (tp, by the topic's tenant in ht;
-- layout.go, "Tenant quotas").
local function countFlush(tag)
  for h, d in pairs(delta) do
    local pending = 0
    for field, n in pairs(d) do
      if n ~= 0 then
        redis.call('HINCRBY', tag .. KEY.counters .. h, field, n)
        pending = pending + pendingOf(field, n)
      end
    end
    if pending ~= 0 then
      local tenant = redis.call('HGET', tag .. KEY.topicTenants, h)
      if tenant then
        redis.call('HINCRBY', tag .. KEY.tenantPending, tenant, pending)
      end
    end
  end
  delta = {}
end

-- clock reads Redis's clock unless the caller pinned one (tests). It
-- returns now in ms, and as a string in ms with the microseconds.
local function clock(pinned)
  local now = tonumber(pinned)
  if now then
    return now, string.format('%d.000', now)
  end
  local t = redis.call('TIME')
  local us = tonumber(t[2])
  now = tonumber(t[1]) * 1000 + math.floor(us / 1000)
  return now, string.format('%d.%03d', now, us % 1000)
end
