-- sched.lua: schedules (layout.go, "Schedules"), put in front of every
-- script. A schedule record is
-- "gen,cur,hi,lf,cu,fl,lt,ls,lm,q|<settings><meta><payload>"; fl is 1 when
-- paused, plus 2 when the pattern has no instant after hi (ended).

-- sparse returns schedule record v as a table, or nil when v is false or
-- no schedule record. Its queue of instants stays a string (s.qs, base 36,
-- ';'-separated): a claim takes one instant from its front, and converting
-- the others to numbers and back would cost a string a digit each.
local function sparse(v)
  if not v then
    return nil
  end
  local gen, cur, hi, lf, cu, fl, lt, ls, lm, q, at =
    string.match(v, '^(%w*),(%w*),(%w*),(%w*),(%a),(%d),(%w*),(%w*),(%w*),([%w;]*)|()')
  if not gen then
    return nil
  end
  fl = tonumber(fl)
  local s = {gen = num(gen), cur = num(cur), hi = num(hi), lf = num(lf), cu = cu, pa = fl % 2 == 1, en = fl >= 2, lt = num(lt),
    ls = num(ls), lm = num(lm), body = string.sub(v, at), qs = q}
  -- as read, so that sformat writes again only what changed (field36)
  s.raw = {gen = gen, cur = cur, hi = hi, lf = lf, lt = lt, ls = ls, lm = lm}
  s.was = {gen = s.gen, cur = s.cur, hi = s.hi, lf = s.lf, lt = s.lt, ls = s.ls, lm = s.lm}
  return s
end

-- field36 is field f of schedule s as stored: as read when it did not change.
local function field36(s, f)
  if s.was and s.was[f] == s[f] then
    return s.raw[f]
  end
  return b36(s[f])
end

-- setRaw sets field f of schedule s to n, whose base 36 is known (e).
local function setRaw(s, f, n, e)
  s[f] = n
  if s.raw then
    s.raw[f], s.was[f] = e, n
  end
end

local function sformat(s)
  local fl = 0
  if s.pa then
    fl = 1
  end
  if s.en then
    fl = fl + 2
  end
  return field36(s, 'gen') .. ',' .. field36(s, 'cur') .. ',' .. field36(s, 'hi') .. ',' .. field36(s, 'lf') .. ',' ..
    s.cu .. ',' .. fl .. ',' .. field36(s, 'lt') .. ',' .. field36(s, 'ls') .. ',' .. field36(s, 'lm') .. ',' .. s.qs ..
    '|' .. s.body
end

-- qfirst returns the first instant of s's queue, or nil when it is empty.
local function qfirst(s)
  local e = string.match(s.qs, '^[^;]+')
  if not e then
    return nil
  end
  return num(e)
end

-- qpop removes the first instant of s's queue and returns it, and its
-- base 36 (nil when the queue is empty).
local function qpop(s)
  if s.qs == '' then
    return nil
  end
  local i = string.find(s.qs, ';', 1, true)
  local e = s.qs
  if i then
    e, s.qs = string.sub(s.qs, 1, i - 1), string.sub(s.qs, i + 1)
  else
    s.qs = ''
  end
  return num(e), e
end

-- qAtLeast reports whether s's queue holds n instants or more (n >= 1):
-- it looks for n-1 separators, without counting them all.
local function qAtLeast(s, n)
  if s.qs == '' then
    return false
  end
  local i = 0
  for _ = 1, n - 1 do
    i = string.find(s.qs, ';', i + 1, true)
    if not i then
      return false
    end
  end
  return true
end

-- qpush appends instant t to s's queue.
local function qpush(s, t)
  if s.qs == '' then
    s.qs = b36(t)
  else
    s.qs = s.qs .. ';' .. b36(t)
  end
end

-- occurrenceID is the job id of schedule sid's occurrence at t (ms).
local function occurrenceID(sid, t)
  return sid .. '@' .. string.format('%d', t)
end

-- scheduleOf returns the schedule id of an occurrence's job id, or nil
-- when id is not one: "<schedule id>@<unix ms>" (kairos.ScheduleOf).
local function scheduleOf(id)
  if not string.find(id, '@', 1, true) then
    return nil -- most ids: one plain search
  end
  return string.match(id, '^(.+)@%d+$')
end

-- fileNew files job id of topic h, record v in state st due at t, unless
-- a job of that id exists: written is the caller's jobs written (a
-- record) or deleted (false) in this call, or nil; put, when given, writes
-- v with the caller's batch, else HSET does. The wheel and listing entries
-- are written by the caller's wheelFlush and indexFlush. It reports
-- whether it filed the job.
local function fileNew(pool, h, id, v, st, t, now, put, written)
  local field = h .. '/' .. id
  local w = written and written[field]
  if w or (w == nil and redis.call('HEXISTS', pool, field) == 1) then
    return false
  end
  if put then
    put(field, v)
  else
    redis.call('HSET', pool, field, v)
  end
  wheelPut(field, t, now)
  indexAdd(h, id, now)
  count(h, NAME[st])
  return true
end

-- occur files schedule s's occurrence at t as a new job of topic h,
-- unless a job of that id exists (a trigger at the same ms); put and
-- written as fileNew's.
local function occur(pool, h, sid, s, t, now, put, written)
  local st = waiting(t, now)
  local v = newRecord(st, now, t, s.lt, s.ls, string.sub(s.body, 1, s.ls) .. string.sub(s.body, s.ls + s.lm + 1))
  fileNew(pool, h, occurrenceID(sid, t), v, st, t, now, put, written)
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
  redis.call('HDEL', pool, field)
  count(h, NAME[r.st], -1)
end
