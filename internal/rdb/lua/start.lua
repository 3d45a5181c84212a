-- start.lua: start the jobs a worker popped: each moves from its pop lease
-- to its lease, once: when a job was pushed twice (its entry was lost in a
-- pop whose reply never came, and pushed again), the first pop to start it
-- fires it and the others drop it. A call is done once per token: its
-- reply is kept under the token for a while, and a call repeated after a
-- lost reply gets it again.
-- KEYS[1] the shard's pop leases, KEYS[2] its leases, KEYS[3] the token's key
-- ARGV[1] how long the token's reply is kept (ms), then for each job: its
-- pop lease's member ("<h>/<id>,<attempt>,<due>,<claimed at>"), its pool
-- field, its lease (ms: when it lapses)
-- Reply: a string of one character a job, '1' when the call started it, else '0'
local done = redis.call('GET', KEYS[3])
if done then
  return done
end
local out = {}
for i = 2, #ARGV, 3 do
  if redis.call('ZREM', KEYS[1], ARGV[i]) == 1 then
    redis.call('ZADD', KEYS[2], ARGV[i + 2], ARGV[i + 1])
    out[#out + 1] = '1'
  else
    out[#out + 1] = '0'
  end
end
local reply = table.concat(out)
redis.call('SET', KEYS[3], reply, 'PX', tonumber(ARGV[1]))
return reply
