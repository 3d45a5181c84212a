-- scheddel.lua: delete a schedule. Its pending occurrence goes with it
-- unless it is being delivered (then it finishes, and files no next one),
-- and so does the one buffer_one holds back until the occurrence in flight
-- ends: with the schedule gone nothing would hold it, and it would fire at
-- once, beside that one.
-- KEYS[1] the shard's pool, KEYS[2] its schedules, KEYS[3] its refill set,
-- KEYS[4] the topic's schedule index in the shard
-- ARGV[1] the shard's key tag, ARGV[2] the topic's handle, ARGV[3] the id
-- Reply: R.ok or R.not_found
local pool, scheds, refills, idx = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local tag, h, sid = ARGV[1], ARGV[2], ARGV[3]
local sf = h .. '/' .. sid
local s = sget(scheds, tag, sf)
if not s then
  return R.not_found
end
if s.cur ~= 0 then
  unoccur(tag, pool, h, sid, s.cur)
end
if s.x and s.x.bw ~= 0 and s.x.bw ~= s.cur then
  unoccur(tag, pool, h, sid, s.x.bw)
end
redis.call('HDEL', scheds, sf)
redis.call('HDEL', s.bk, sf)
redis.call('SREM', refills, sf)
redis.call('ZREM', idx, sid)
countFlush(tag)
return R.ok
