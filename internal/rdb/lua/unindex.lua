-- unindex.lua: drop a listing entry whose job is gone.
-- KEYS[1] the shard's pool
-- ARGV[1] the shard's key tag, ARGV[2] the topic's handle, ARGV[3] id,
-- ARGV[4] the entry's creation time (ms)
-- The entry stays while its job exists; an entry of an earlier job of the
-- same id goes.
-- Reply: 1 dropped (if it was still there), 0 kept
local r = parse(redis.call('HGET', KEYS[1], ARGV[2] .. '/' .. ARGV[3]))
local ca = tonumber(ARGV[4])
if r and r.ca == ca then
  return 0
end
unindex(ARGV[1], ARGV[2], ARGV[3], ca)
return 1
