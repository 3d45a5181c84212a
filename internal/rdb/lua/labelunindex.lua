-- labelunindex.lua: drop label index entries whose job is gone.
-- KEYS[1] the shard's pool, KEYS[2..] label indexes of the topic
-- ARGV[1] the topic's handle, ARGV[2] id, ARGV[3] the entry's creation
-- time (ms)
-- An entry stays while its job (created at that time) exists.
-- Reply: 1 dropped, 0 kept
local r = parse(redis.call('HGET', KEYS[1], ARGV[1] .. '/' .. ARGV[2]))
if r and r.ca == tonumber(ARGV[3]) then
  return 0
end
for i = 2, #KEYS do
  redis.call('ZREM', KEYS[i], ARGV[2])
end
return 1
