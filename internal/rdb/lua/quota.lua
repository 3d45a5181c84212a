-- quota.lua: take one request from a tenant's request rate, by GCRA (the
-- generic cell rate algorithm, as github.com/go-redis/redis_rate and
-- rwz/redis-gcra run it): the key holds the theoretical arrival time
-- (TAT); a request is allowed when it would not push the TAT more than the
-- burst ahead of now. A refused request writes nothing.
-- KEYS[1] the tenant's rate key
-- ARGV[1] now (ms), or '' to read Redis's TIME, ARGV[2] the emission
-- interval (us: the period over the limit), ARGV[3] the burst
-- Reply: 0 allowed, or the wait before a request would be (us, > 0)
local now = clock(ARGV[1]) * 1000 -- us
local interval, burst = tonumber(ARGV[2]), tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then
  tat = now
end
local newTat = tat + interval
local allowAt = newTat - interval * burst
if allowAt > now then
  return allowAt - now
end
redis.call('SET', KEYS[1], string.format('%d', newTat), 'PX', math.ceil((newTat - now) / 1000) + 1)
return 0
