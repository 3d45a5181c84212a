-- deadcopy.lua: copy a rank range of a topic's dead letters into the
-- tenant's and every tenant's dead letters: the upgrade of a layout whose
-- jobs died before those sets were kept (see Store.indexDead).
-- KEYS[1] topic dead letters, KEYS[2] the tenant's dead letters, KEYS[3]
-- every tenant's dead letters (all in one shard)
-- ARGV[1] first rank, ARGV[2] last rank (ascending, inclusive), ARGV[3]
-- member prefix ("tenant/topic/")
-- Reply: how many entries it copied
local v = redis.call('ZRANGE', KEYS[1], ARGV[1], ARGV[2], 'WITHSCORES')
local args = {}
for i = 1, #v, 2 do
  args[#args + 1] = v[i + 1]
  args[#args + 1] = ARGV[3] .. v[i]
end
if #args > 0 then
  redis.call('ZADD', KEYS[2], unpack(args))
  redis.call('ZADD', KEYS[3], unpack(args))
end
return #args / 2
