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

-- Labels (layout.go, "Labels"): a labelled job's settings hold
-- "lb":{"<key>":"<value>",...}, and each of its pairs has in its shard
-- the ZSET <tag>lb:<h>:<key>=<value> of the topic's jobs with it, id ->
-- created at (ms). A job without labels has no such entry, and costs the
-- check of its settings' length (most have none) and one search of them.

-- labelKeys returns the label index keys of a job of topic h whose
-- settings are the ls bytes of src after offset from; nil for a job
-- without labels. "lb":{ can only be the labels' key: a header's value is
-- a string, and a quote inside one is escaped.
local function labelKeys(tag, h, src, from, ls)
  if ls < 10 then
    return nil
  end
  local set = string.sub(src, from + 1, from + ls)
  if not string.find(set, '"lb":{', 1, true) then
    return nil
  end
  local ok, s = pcall(cjson.decode, set)
  if not ok or type(s) ~= 'table' or type(s.lb) ~= 'table' then
    return nil
  end
  local ks = {}
  for k, v in pairs(s.lb) do
    ks[#ks + 1] = tag .. KEY.label .. h .. ':' .. k .. '=' .. v
  end
  return ks
end

-- labelAdd indexes job id of topic h, created at ca, under its labels
-- (settings as labelKeys').
local function labelAdd(tag, h, id, ca, src, from, ls)
  local ks = labelKeys(tag, h, src, from, ls)
  if ks then
    for _, k in ipairs(ks) do
      redis.call('ZADD', k, ca, id)
    end
  end
end

-- labelRem drops job id of topic h from the indexes of its labels.
local function labelRem(tag, h, id, src, from, ls)
  local ks = labelKeys(tag, h, src, from, ls)
  if ks then
    for _, k in ipairs(ks) do
      redis.call('ZREM', k, id)
    end
  end
end

-- labelRemRecord is labelRem for a parsed record r.
local function labelRemRecord(tag, h, id, r)
  if r.ls >= 10 then
    local src, from = sourceOf(r)
    labelRem(tag, h, id, src, from, r.ls)
  end
end

-- labelAddRecord is labelAdd for a parsed record r.
local function labelAddRecord(tag, h, id, r)
  if r.ls >= 10 then
    local src, from = sourceOf(r)
    labelAdd(tag, h, id, r.ca, src, from, r.ls)
  end
end

-- ended reports whether record r ended (delivered, dead, expired or
-- cancelled): a new job may then take its id.
local function ended(r)
  return r.st == ST.delivered or r.st == ST.dead or r.st == ST.expired or r.st == ST.cancelled
end

-- replaceEnded makes way for a new job of id (topic h, of tenant), in
-- state, over old, an ended record of that id: old leaves the listing
-- and the dead letters, the counters move, and it returns the new job's
-- creation time: now, or later than old's, since the webhook id comes from it.
local function replaceEnded(tag, tenant, h, id, old, state, now)
  unindex(tag, h, id, old.ca)
  if old.st == ST.dead then
    deadRemove(tag, tenant, h, id)
    count(h, 'dead>' .. state)
  else
    count(h, state)
  end
  return math.max(now, old.ca + 1)
end
