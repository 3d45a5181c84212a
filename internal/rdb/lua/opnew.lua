-- opnew.lua: store a new bulk operation: running, held by its creator,
-- when its tenant has a free slot and none queued before it, else queued.
-- Operations queued before it that a free slot lets start start first.
-- KEYS[1] the operation's hash, KEYS[2] the running operations (run),
-- KEYS[3] the tenant's running operations, KEYS[4] its queued ones
-- ARGV[1] id, ARGV[2] now (ms), or '' to read Redis's TIME, ARGV[3] lease
-- (ms), ARGV[4] how many of a tenant's operations may run at once,
-- ARGV[5] owner, ARGV[6..] field, value pairs of the operation
-- Reply: {now (ms), its state, the ids of the queued operations it started}
local now = clock(ARGV[2])
local lease, most = tonumber(ARGV[3]), tonumber(ARGV[4])
local opprefix = string.sub(KEYS[1], 1, #KEYS[1] - #ARGV[1])
local started = opsStart(KEYS[2], KEYS[3], KEYS[4], opprefix, most, ARGV[5], now, lease)
local state = 'queued'
if redis.call('ZCARD', KEYS[4]) == 0 and opsRunning(KEYS[3], opprefix) < most then
  state = 'running'
end
local fv = {'state', state, 'created', now, 'done', 0, 'failed', 0, 'owner', ARGV[5]}
for i = 6, #ARGV do
  fv[#fv + 1] = ARGV[i]
end
redis.call('HSET', KEYS[1], unpack(fv))
if state == 'running' then
  redis.call('ZADD', KEYS[2], now + lease, ARGV[1])
  redis.call('SADD', KEYS[3], ARGV[1])
else
  redis.call('ZADD', KEYS[4], now, ARGV[1])
end
return {now, state, unpack(started)}
