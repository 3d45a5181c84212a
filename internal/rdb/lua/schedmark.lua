-- schedmark.lua: write a schedule's meta anew (the part of its body only Go
-- reads, such as the instant of its last manual trigger), unless the
-- schedule changed since Go read the meta it made this one from.
-- KEYS[1] the shard's schedules, KEYS[2] the shard's schedule bodies
-- ARGV[1] the schedule's field (<h>/<id>), ARGV[2] the version (gen) the
-- new meta was made from, ARGV[3] the new meta
-- Reply: R.ok; R.not_found when the schedule is gone; R.replaced when its
-- version is another (a put, pause or resume came between): read it again
local scheds, bodies, sf, meta = KEYS[1], KEYS[2], ARGV[1], ARGV[3]
local s = sparse(redis.call('HGET', scheds, sf), bodies, sf)
if not s then
  return R.not_found
end
if s.gen ~= tonumber(ARGV[2]) then
  return R.replaced
end
local body = redis.call('HGET', bodies, sf) or ''
redis.call('HSET', bodies, sf, meta .. string.sub(body, s.lm + 1))
s.lm = #meta
sput(scheds, s)
return R.ok
