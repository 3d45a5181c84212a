-- opadopt.lua: take a running bulk operation whose lease lapsed (its
-- process died), or renew one's own.
-- KEYS[1] the operation's hash, KEYS[2] the running operations (run)
-- ARGV[1] id, ARGV[2] owner, ARGV[3] now (ms) or '', ARGV[4] lease (ms)
-- Reply: 1 taken (or renewed), 0 not: done, gone, or held by another
local now = clock(ARGV[3])
local until_ = tonumber(redis.call('ZSCORE', KEYS[2], ARGV[1]))
if not until_ or redis.call('HGET', KEYS[1], 'state') ~= 'running' then
  return 0
end
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[2] and until_ > now then
  return 0
end
redis.call('HSET', KEYS[1], 'owner', ARGV[2])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), ARGV[1])
return 1
