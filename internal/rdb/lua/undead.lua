-- undead.lua: drop a dead-letter entry across topics whose job is no
-- longer dead (replayed, cancelled, or created again by a version that did
-- not keep these sets).
-- KEYS[1] the shard's pool
-- ARGV[1] the shard's key tag, ARGV[2] tenant, ARGV[3] the job's pool field
-- Reply: 1 dropped, 0 kept
local r = parse(redis.call('HGET', KEYS[1], ARGV[3]))
if r and r.st == ST.dead then
  return 0
end
redis.call('ZREM', ARGV[1] .. KEY.deadTenant .. ARGV[2], ARGV[3])
redis.call('ZREM', ARGV[1] .. KEY.deadAll, ARGV[3])
return 1
