-- handle.lua: the handle of a tenant's topic, given on first use and kept.
-- KEYS[1] the handles hash
-- ARGV[1] "tenant/topic"
-- Reply: the handle (base 36)
local h = redis.call('HGET', KEYS[1], HANDLE.name .. ARGV[1])
if h then
  return h
end
h = b36(redis.call('HINCRBY', KEYS[1], HANDLE.seq, 1))
redis.call('HSET', KEYS[1], HANDLE.name .. ARGV[1], h, HANDLE.handle .. h, ARGV[1])
return h
