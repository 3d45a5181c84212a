-- lock.lua: take a scanner's shard mutex (redsync's SET NX PX), as a script
-- that may run while Redis is out of memory: claims free memory (delivered
-- jobs' records expire through them), so scanning must go on when new work
-- is refused.
-- KEYS[1] the mutex, ARGV[1] its value, ARGV[2] its expiry (ms)
-- Reply: 1 when taken, 0 when held already
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
return 0
