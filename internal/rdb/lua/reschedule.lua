-- reschedule.lua: move a pending job that has not fired to a new time.
-- KEYS[1] bucket, KEYS[2] job, KEYS[3] topic counters
-- ARGV[1] bucket member, ARGV[2] run_at (ms)
-- Reply: {0} no such job, {-1} being delivered now, {-2} already delivered,
-- {-3} dead (replay it instead), else {1, gen, earliest, field1, value1, ...}
-- (the job as now stored).
local v = redis.call('HMGET', KEYS[2], 'st', 'g')
local st = v[1]
if not st then
  return {0}
end
if st == 'active' then
  return {-1}
end
if st == 'delivered' then
  return {-2}
end
if st == 'dead' then
  return {-3}
end
local gen = tonumber(v[2] or '1') + 1 -- generation 1 has no 'g'
local runAt = ARGV[2]
redis.call('HSET', KEYS[2], 'st', 'scheduled', 'g', gen, 'ra', runAt, 'na', runAt, 'a', 0)
redis.call('ZADD', KEYS[1], runAt, ARGV[1])
if st ~= 'scheduled' then
  redis.call('HINCRBY', KEYS[3], st .. '>scheduled', 1)
end
local earliest = 0
local first = redis.call('ZRANGE', KEYS[1], 0, 0)
if first[1] == ARGV[1] then
  earliest = 1
end
local out = redis.call('HGETALL', KEYS[2])
table.insert(out, 1, earliest)
table.insert(out, 1, gen)
table.insert(out, 1, 1)
return out
