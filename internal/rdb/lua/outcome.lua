-- outcome.lua: append attempt outcomes to a shard's outcome list when Redis
-- is out of memory (Store.writeFinishes sends a plain RPUSH otherwise; see
-- claim.lua, which applies them). A script rather than a plain RPUSH so
-- that it may run while Redis is out of memory: an outcome finishes work
-- (a delivered job's record is dropped after the retention), and a worker
-- whose outcome were refused would see its job sent again.
-- KEYS[1] the shard's outcome list
-- ARGV the outcomes, "<h>/<id>,<attempt>,<outcome>,<retry at>,<tenant>|<log line>"
-- Reply: the list's length after the append
return redis.call('RPUSH', KEYS[1], unpack(ARGV))
