-- job.lua: helpers put in front of every script, after the prelude that
-- layout.go generates (ST, R, OUT, LOG_KEEP, WHEEL). A job record is
-- "st,n,ca,ra,nx,fa,lt,ls,ll|<settings><log><payload>" (layout.go).

-- NAME maps a state code to the state's name (counter fields use names).
local NAME = {}
for name, code in pairs(ST) do
  NAME[code] = name
end

local DIGITS = '0123456789abcdefghijklmnopqrstuvwxyz'

-- b36 writes a whole number >= 0 in base 36; 0 is ''.
local function b36(n)
  local s = ''
  while n and n > 0 do
    local r = n % 36
    s = string.sub(DIGITS, r + 1, r + 1) .. s
    n = (n - r) / 36
  end
  return s
end

local function num(s)
  if s == '' then
    return 0
  end
  return tonumber(s, 36)
end

-- parse returns record v as a table, or nil when v is false.
local function parse(v)
  if not v then
    return nil
  end
  local st, n, ca, ra, nx, fa, lt, ls, ll, at =
    string.match(v, '^(%a),(%w*),(%w*),(%w*),(%w*),(%w*),(%w*),(%w*),(%w*)|()')
  local r = {st = st, n = num(n), ca = num(ca), ra = num(ra), nx = num(nx), fa = num(fa), lt = num(lt),
    ls = num(ls), ll = num(ll), body = string.sub(v, at)}
  if nx == '' then
    r.nx = r.ra -- an empty next time is the run_at
  end
  return r
end

local function format(r)
  local nx = ''
  if r.nx ~= r.ra then
    nx = b36(r.nx)
  end
  return r.st .. ',' .. b36(r.n) .. ',' .. b36(r.ca) .. ',' .. b36(r.ra) .. ',' .. nx .. ',' ..
    b36(r.fa) .. ',' .. b36(r.lt) .. ',' .. b36(r.ls) .. ',' .. b36(r.ll) .. '|' .. r.body
end

-- addLog appends one attempt line (ending in a newline) to r's log and
-- keeps the last LOG_KEEP lines.
local function addLog(r, line)
  local settings = string.sub(r.body, 1, r.ls)
  local log = string.sub(r.body, r.ls + 1, r.ls + r.ll) .. line
  local payload = string.sub(r.body, r.ls + r.ll + 1)
  local _, lines = string.gsub(log, '\n', '\n')
  while lines > LOG_KEEP do
    log = string.sub(log, string.find(log, '\n', 1, true) + 1)
    lines = lines - 1
  end
  r.ll = #log
  r.body = settings .. log .. payload
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

-- slotAt returns the slot of level (1-based) holding time t: its name, the
-- score it is processed at, and its start.
local function slotAt(level, t)
  local w = WHEEL[level]
  local n = math.floor(t / w)
  local start = n * w
  local score = start
  if level > 1 then
    score = start - WHEEL[level - 1]
  end
  return (level - 1) .. ':' .. b36(n), score, start
end

local function wheelPutAt(field, t, level)
  local m, score, start = slotAt(level, t)
  local e = wheel[m]
  if not e then
    e = {}
    wheel[m] = e
    wheelScore[m] = score
  end
  e[#e + 1] = field .. ',' .. b36(t - start)
end

-- wheelPut files field at time t in the widest level processed after now.
local function wheelPut(field, t, now)
  for level = #WHEEL, 2, -1 do
    local _, score = slotAt(level, t)
    if score > now then
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
    redis.call('RPUSH', tag .. 'w:' .. m, unpack(parts))
    zadd[#zadd + 1] = wheelScore[m]
    zadd[#zadd + 1] = m
    if not soonest or wheelScore[m] < soonest then
      soonest = wheelScore[m]
    end
  end
  if #zadd > 0 then
    redis.call('ZADD', due, 'NX', unpack(zadd))
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
  redis.call('ZADD', tag .. 'd:' .. h, at, id)
  redis.call('ZADD', tag .. 'dt:' .. tenant, at, h .. '/' .. id)
  redis.call('ZADD', tag .. 'dall', at, h .. '/' .. id)
end

local function deadRemove(tag, tenant, h, id)
  redis.call('ZREM', tag .. 'd:' .. h, id)
  redis.call('ZREM', tag .. 'dt:' .. tenant, h .. '/' .. id)
  redis.call('ZREM', tag .. 'dall', h .. '/' .. id)
end

-- Counters: a topic's counts by state in the shard, updated once a call.
local delta = {}
local function count(h, field, n)
  local d = delta[h]
  if not d then
    d = {}
    delta[h] = d
  end
  d[field] = (d[field] or 0) + (n or 1)
end

local function countFlush(tag)
  for h, d in pairs(delta) do
    for field, n in pairs(d) do
      if n ~= 0 then
        redis.call('HINCRBY', tag .. 'c:' .. h, field, n)
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
