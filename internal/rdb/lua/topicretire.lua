-- topicretire.lua: retire a topic's handle in one shard, so that no job or
-- schedule is written under it any more (layout.go, "Deleting a topic").
-- KEYS[1] the shard's retired handles (gone), KEYS[2] the topic's counters
-- in the shard, KEYS[3] the topic's schedule index in the shard
-- ARGV[1] the topic's handle
-- Reply: {0, 0} when retired (or already so), else {jobs, schedules}: the
-- pending or dead jobs and the schedules the topic holds in the shard, and
-- nothing changed.
local counts = {}
local all = redis.call('HGETALL', KEYS[2])
for i = 1, #all, 2 do
  local f, n = all[i], tonumber(all[i + 1])
  if string.sub(f, 1, #OCC) == OCC then
    f = string.sub(f, #OCC + 1)
  end
  local from, to = string.match(f, '^(.-)>(.*)$')
  if from then
    counts[from] = (counts[from] or 0) - n
    counts[to] = (counts[to] or 0) + n
  else
    counts[f] = (counts[f] or 0) + n
  end
end
local jobs = 0
for st, n in pairs(counts) do
  if st ~= NAME[ST.delivered] and st ~= NAME[ST.expired] and st ~= NAME[ST.cancelled] then
    jobs = jobs + n
  end
end
local schedules = redis.call('ZCARD', KEYS[3])
if jobs > 0 or schedules > 0 then
  return {jobs, schedules}
end
redis.call('SADD', KEYS[1], ARGV[1])
return {0, 0}
