-- opnew.lua: store a new bulk operation, held by its creator.
-- KEYS[1] the operation's hash, KEYS[2] the running operations (run)
-- ARGV[1] id, ARGV[2] now (ms), or '' to read Redis's TIME, ARGV[3] lease
-- (ms), ARGV[4..] field, value pairs of the operation (owner among them)
-- Reply: now (ms)
local now = clock(ARGV[2])
local fv = {'state', 'running', 'created', now, 'done', 0, 'failed', 0}
for i = 4, #ARGV do
  fv[#fv + 1] = ARGV[i]
end
redis.call('HSET', KEYS[1], unpack(fv))
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
return now
