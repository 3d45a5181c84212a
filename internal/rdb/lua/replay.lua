-- replay.lua: give a dead job a fresh set of attempts, due now.
-- KEYS[1] bucket, KEYS[2] job, KEYS[3] topic counters, KEYS[4] dead letters,
-- KEYS[5] the tenant's dead letters, KEYS[6] every tenant's dead letters
-- ARGV[1] bucket member, ARGV[2] id, ARGV[3] now (ms), ARGV[4] ready lease (ms)
-- Reply: {0} no such job, {-1} not dead, else {1, gen, field1, value1, ...}
-- (the job as now stored): the caller pushes "id|gen" onto the ready list.
local v = redis.call('HMGET', KEYS[2], 'st', 'g')
if not v[1] then
  return {0}
end
if v[1] ~= 'dead' then
  return {-1}
end
local now = tonumber(ARGV[3])
local gen = tonumber(v[2] or '1') + 1 -- generation 1 has no 'g'
redis.call('HSET', KEYS[2], 'st', 'ready', 'g', gen, 'a', 0, 'ra', now, 'na', now)
redis.call('HDEL', KEYS[2], 'fa')
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[2])
redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('ZREM', KEYS[6], ARGV[1])
redis.call('HINCRBY', KEYS[3], 'dead>ready', 1)
local out = redis.call('HGETALL', KEYS[2])
table.insert(out, 1, gen)
table.insert(out, 1, 1)
return out
