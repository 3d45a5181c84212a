-- schedrefill.lua: top up a schedule's queue of instants (Store.refill).
-- KEYS[1] the shard's pool, KEYS[2] its wheel (due), KEYS[3] its
-- schedules, KEYS[4] its refill set
-- ARGV[1] now (ms), or '' to read Redis's TIME, ARGV[2] the shard's key
-- tag, ARGV[3] the topic's handle, ARGV[4] the schedule id, ARGV[5] the
-- version (gen) the instants were computed for, ARGV[6] the hi they were
-- computed after, ARGV[7] wake horizon (ms), ARGV[8] how many missed
-- instants follow (catch-up "all": each fires), then those, then the next
-- instants after now, ascending.
-- When no occurrence is pending, the first instant becomes the pending one.
-- Reply: {R.ok, earliest}, or {R.not_found} when the schedule is gone or
-- changed since (its refill, if still needed, is asked for again).
local pool, due, scheds, refills = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now = clock(ARGV[1])
local tag, h, sid = ARGV[2], ARGV[3], ARGV[4]
local sf = h .. '/' .. sid
redis.call('SREM', refills, sf)
local s = sparse(redis.call('HGET', scheds, sf))
if not s or s.gen ~= tonumber(ARGV[5]) or s.hi ~= tonumber(ARGV[6]) or s.pa then
  return {R.not_found}
end
local missed = tonumber(ARGV[8])
if s.cur == 0 and s.cu == 'a' then
  for i = 9, math.min(8 + missed, 8 + CATCHUP_MAX) do
    occur(tag, pool, h, sid, s, tonumber(ARGV[i]), now)
  end
end
for i = 9 + missed, #ARGV do
  local t = tonumber(ARGV[i])
  if t > s.hi then
    s.q[#s.q + 1] = t
    s.hi = t
  end
end
if s.cur == 0 and #s.q > 0 then
  s.cur = table.remove(s.q, 1)
  occur(tag, pool, h, sid, s, s.cur, now)
end
redis.call('HSET', scheds, sf, sformat(s))
countFlush(tag)
return {R.ok, earliestOf(due, wheelFlush(tag, due), now + tonumber(ARGV[7]))}
