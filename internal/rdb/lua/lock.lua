-- lock.lua: take a scanner's shard mutex (redsync's SET NX PX), as a script
-- that may run while Redis is out of memory: claims free memory (delivered
-- jobs' records expire through them), so scanning must go on when new work
-- is refused. A mutex that holds the caller's value already is its own:
-- taken or extended by a call whose reply was lost (Redis froze, or the
-- connection dropped); it is extended and taken again, rather than waited
-- for until it expires.
-- KEYS[1] the mutex, ARGV[1] its value, ARGV[2] its expiry (ms)
-- Reply: 1 when taken, 0 when held by another value
local held = redis.call('GET', KEYS[1])
if held == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if held then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
