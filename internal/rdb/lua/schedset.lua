-- schedset.lua: create or replace a schedule, pause or resume it.
-- KEYS[1] the shard's pool, KEYS[2] its wheel (due), KEYS[3] its schedules,
-- KEYS[4] its refill set, KEYS[5] the topic's schedule index in the shard,
-- KEYS[6] its handles of deleted topics (gone)
-- ARGV[1] now (ms), or '' to read Redis's TIME, ARGV[2] the shard's key tag,
-- ARGV[3] the topic's handle, ARGV[4] the schedule id, ARGV[5] the mode:
-- 'put', 'pause' or 'resume', ARGV[6] wake horizon (ms), ARGV[7] 1 when
-- Go can compute more instants after the last given (the pattern has not
-- ended); for 'put' ARGV[8] catch-up code, ARGV[9] paused (1/0), ARGV[10]
-- lease timeout (ms), ARGV[11] settings length, ARGV[12] meta length,
-- ARGV[13] the body: meta, settings and payload, ARGV[14] the extension:
-- '' for none, else the overlap code and max_runs ('s0', 'a5'); then (put
-- and resume) the next instants (ms), ascending, the first of them after
-- now. A put keeps the counts of the extension the schedule had; one that
-- reached its max_runs files nothing.
-- The pending occurrence of the schedule as it was is removed unless it
-- is being delivered; the first instant given becomes the pending one.
-- Reply: {R.ok (created) or R.replaced, earliest} ({R.not_found} when
-- pausing or resuming no schedule; {R.topic_gone}, nothing written, when
-- the topic was deleted).
local pool, due, scheds, refills, idx = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
if redis.call('SISMEMBER', KEYS[6], ARGV[3]) == 1 then
  return {R.topic_gone}
end
local now = clock(ARGV[1])
local tag, h, sid, mode = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local sf = h .. '/' .. sid
local old = sget(scheds, tag, sf)
local s, first
local pending = old and old.cur or 0
if mode == 'put' then
  s = {gen = 1, cur = 0, hi = 0, lf = 0, cu = ARGV[8], pa = ARGV[9] == '1', lt = tonumber(ARGV[10]), qs = '',
    ls = tonumber(ARGV[11]), lm = tonumber(ARGV[12]), body = ARGV[13], bk = tag .. KEY.scheduleBodies, sf = sf}
  if old then
    s.gen, s.lf = old.gen + 1, old.lf
  end
  if ARGV[14] ~= '' then
    s.x = {ov = string.sub(ARGV[14], 1, 1), mr = tonumber(string.sub(ARGV[14], 2)), rn = 0, lo = 0, bw = 0, sk = 0}
    if old and old.x then
      s.x.rn, s.x.lo, s.x.sk = old.x.rn, old.x.lo, old.x.sk
      if s.x.ov == 'b' then
        s.x.bw = old.x.bw
      end
    end
  end
  first = 15
else
  if not old then
    return {R.not_found}
  end
  if old.pa == (mode == 'pause') then
    return {R.ok, false} -- already so
  end
  s = old
  s.gen, s.pa, s.en, s.qs, s.cur, s.hi = old.gen + 1, mode == 'pause', false, '', 0, 0
  first = 8
end
if pending ~= 0 then
  unoccur(tag, pool, h, sid, pending)
end
redis.call('SREM', refills, sf)
if not s.pa and not done(s) then
  for i = first + 1, #ARGV do
    qpush(s, tonumber(ARGV[i]))
  end
  if ARGV[first] then
    s.hi = tonumber(ARGV[#ARGV])
    s.cur = tonumber(ARGV[first])
    occur(pool, h, sid, s, s.cur, now)
  end
  s.en = ARGV[7] ~= '1'
  askRefill(refills, s)
end
sput(scheds, s)
if s.body then
  redis.call('HSET', s.bk, sf, s.body)
end
redis.call('ZADD', idx, 0, sid)
indexFlush(tag)
countFlush(tag)
local result = R.ok
if old then
  result = R.replaced
end
return {result, earliestOf(due, wheelFlush(tag, due), now + tonumber(ARGV[6]))}
