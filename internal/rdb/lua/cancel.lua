-- cancel.lua: remove a job that has not been delivered.
-- KEYS[1] bucket, KEYS[2] job, KEYS[3] topic index, KEYS[4] topic counters,
-- KEYS[5] topic dead letters, KEYS[6] the tenant's dead letters, KEYS[7]
-- every tenant's dead letters
-- ARGV[1] bucket member, ARGV[2] id, ARGV[3] the topic's index group key prefix
-- Reply: 1 removed, 0 no such job, -1 being delivered now, -2 already delivered
local v = redis.call('HMGET', KEYS[2], 'st', 'ca')
local st = v[1]
if not st then
  return 0
end
if st == 'active' then
  return -1
end
if st == 'delivered' then
  return -2
end
redis.call('ZREM', KEYS[1], ARGV[1])
unindex(KEYS[3], ARGV[3], ARGV[2], v[2])
if st == 'dead' then
  redis.call('ZREM', KEYS[5], ARGV[2])
  redis.call('ZREM', KEYS[6], ARGV[1])
  redis.call('ZREM', KEYS[7], ARGV[1])
end
redis.call('DEL', KEYS[2])
redis.call('HINCRBY', KEYS[4], st, -1)
return 1
