-- topicdel.lua: remove a topic's record if it is still the one read
-- (layout.go, "Deleting a topic").
-- KEYS[1] the topics hash
-- ARGV[1] the topic's field ("tenant/topic"), ARGV[2] its record as read
-- Reply: 1 when removed, 0 when the record is gone or another.
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then
  return 0
end
return redis.call('HDEL', KEYS[1], ARGV[1])
