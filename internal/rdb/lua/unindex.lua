-- unindex.lua: drop a listing entry whose job is gone.
-- KEYS[1] topic index, KEYS[2] job
-- ARGV[1] id, ARGV[2] the entry's score (creation time, ms) when it was read,
-- ARGV[3] the topic's index group key prefix
-- The entry stays while its job exists; an entry of an earlier job of the
-- same id goes.
-- Reply: 1 dropped (if it was still there), 0 kept
if redis.call('HGET', KEYS[2], 'ca') == ARGV[2] then
  return 0
end
unindex(KEYS[1], ARGV[3], ARGV[1], ARGV[2])
return 1
