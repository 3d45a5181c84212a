-- unindex.lua: drop a listing entry whose job has expired.
-- KEYS[1] topic index, KEYS[2] job
-- ARGV[1] id, ARGV[2] the entry's score when it was read
-- The entry stays if the id was created again since (job exists or the score moved).
-- Reply: 1 dropped, 0 kept
if redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
local sc = redis.call('ZSCORE', KEYS[1], ARGV[1])
if sc and tonumber(sc) == tonumber(ARGV[2]) then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return 1
end
return 0
