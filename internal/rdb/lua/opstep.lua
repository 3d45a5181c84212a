-- opstep.lua: record a batch of a bulk operation, fenced by its owner: a
-- process whose lease lapsed and was taken over changes nothing. The last
-- batch frees the operation's slot: the tenant's oldest queued operation
-- starts, held by the same owner.
-- KEYS[1] the operation's hash, KEYS[2] the running operations (run),
-- KEYS[3] the tenant's running operations, KEYS[4] its queued ones
-- ARGV[1] id, ARGV[2] owner, ARGV[3] now (ms) or '', ARGV[4] lease (ms),
-- ARGV[5] the cursor after the batch, ARGV[6] candidates that did not
-- match (taken off the estimate in matched), ARGV[7] done, ARGV[8]
-- failed, ARGV[9] '1' when the operation is finished, ARGV[10] how long a
-- finished one stays readable (ms), ARGV[11] how many of a tenant's
-- operations may run at once
-- Reply: {1, the ids of the queued operations it started} when recorded,
-- {0} when not the owner (or not running): stop
local now = clock(ARGV[3])
local op = redis.call('HMGET', KEYS[1], 'owner', 'state')
if op[1] ~= ARGV[2] or op[2] ~= 'running' then
  return {0}
end
redis.call('HSET', KEYS[1], 'cursor', ARGV[5])
local unmatched = tonumber(ARGV[6])
if unmatched > 0 then -- never HINCRBY by -0: Redis reads "-0" as no integer
  redis.call('HINCRBY', KEYS[1], 'matched', 0 - unmatched)
end
local done = redis.call('HINCRBY', KEYS[1], 'done', tonumber(ARGV[7]))
local failed = redis.call('HINCRBY', KEYS[1], 'failed', tonumber(ARGV[8]))
if ARGV[9] == '1' then
  -- finished: matched is now exact, what was acted on
  redis.call('HSET', KEYS[1], 'state', 'done', 'finished', now, 'matched', done + failed)
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('SREM', KEYS[3], ARGV[1])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[10]))
  local opprefix = string.sub(KEYS[1], 1, #KEYS[1] - #ARGV[1])
  return {1, unpack(opsStart(KEYS[2], KEYS[3], KEYS[4], opprefix, tonumber(ARGV[11]), ARGV[2], now, tonumber(ARGV[4])))}
end
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), ARGV[1])
return {1}
