-- undead.lua: drop a stale entry from the dead letters across topics: its
-- job is gone or no longer dead (changed by a process of a version that did
-- not keep these sets).
-- KEYS[1] job, KEYS[2] the tenant's dead letters, KEYS[3] every tenant's
-- ARGV[1] member ("tenant/topic/id")
-- Reply: 1 dropped, 0 kept (the job is dead)
if redis.call('HGET', KEYS[1], 'st') == 'dead' then
  return 0
end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return 1
