-- index.lua: a topic's listing index in a shard, put in front of the
-- scripts that change it. Jobs are listed by creation time: the ZSET
-- <tag>i:<h> holds one member '#<sec>' (base 36) for each second in which
-- the topic's jobs were created, scored by that second (unix ms), and the
-- list <tag>g:<h>:<sec> holds those jobs as '<id>,<ms into the second>' in
-- the order they were created: a few bytes a job.

local function groupKey(tag, h, sec)
  return tag .. KEY.group .. h .. ':' .. b36(sec)
end

-- index lists jobs created at their ms: entries is a list of {id, ca}.
local function index(tag, h, entries)
  local groups, order = {}, {}
  for _, e in ipairs(entries) do
    local sec = e[2] - e[2] % 1000
    local g = groups[sec]
    if not g then
      g = {}
      groups[sec] = g
      order[#order + 1] = sec
    end
    g[#g + 1] = e[1] .. ',' .. b36(e[2] - sec)
  end
  for _, sec in ipairs(order) do
    callMany('RPUSH', groupKey(tag, h, sec), groups[sec])
    redis.call('ZADD', tag .. KEY.index .. h, sec, GROUP_MARK .. b36(sec))
  end
end

-- indexAdd lists job id of topic h created at ca, at the call's
-- indexFlush: one RPUSH and one ZADD a topic and second, whatever the
-- number of jobs.
local indexed = {}
local function indexAdd(h, id, ca)
  local es = indexed[h]
  if not es then
    es = {}
    indexed[h] = es
  end
  es[#es + 1] = {id, ca}
end

local function indexFlush(tag)
  for h, es in pairs(indexed) do
    index(tag, h, es)
  end
  indexed = {}
end

-- unindex drops the entry of id created at ca (ms); an entry of another
-- job of the same id stays.
local function unindex(tag, h, id, ca)
  local sec = ca - ca % 1000
  local gk = groupKey(tag, h, sec)
  if redis.call('LREM', gk, 1, id .. ',' .. b36(ca - sec)) == 1 and redis.call('EXISTS', gk) == 0 then
    redis.call('ZREM', tag .. KEY.index .. h, GROUP_MARK .. b36(sec))
  end
end
