-- index.lua: the listing index's helpers, put in front of the scripts that
-- change it. A topic's index (one ZSET per shard) holds a job as member id,
-- scored by its creation time (unix ms). Jobs that one call creates
-- together, GROUP_MIN or more, share one member '#<ms>' (never an id: ids
-- start with a letter or digit), and their ids are kept in the string key
-- <group prefix><ms>, each led by a space: about 16 bytes a job instead of
-- a ZSET entry's 127.
local GROUP_MIN = 4

-- index adds ids, created at ms (a string), to index ix; gp is the topic's
-- group key prefix.
local function index(ix, gp, ms, ids)
  if #ids >= GROUP_MIN then
    redis.call('APPEND', gp .. ms, ' ' .. table.concat(ids, ' '))
    redis.call('ZADD', ix, ms, '#' .. ms)
  elseif #ids > 0 then
    local args = {}
    for _, id in ipairs(ids) do
      args[#args + 1] = ms
      args[#args + 1] = id
    end
    redis.call('ZADD', ix, unpack(args))
  end
end

-- unindex drops the entry of id created at ms ca (a string): its member
-- scored ca, or its place in group ca. An entry of another job of the same
-- id (created before or after) stays. With ca nil (unknown), a member of
-- the id's own goes, whatever its score.
local function unindex(ix, gp, id, ca)
  local sc = redis.call('ZSCORE', ix, id)
  if sc and (not ca or tonumber(sc) == tonumber(ca)) then
    redis.call('ZREM', ix, id)
    return
  end
  if not ca then
    return
  end
  local gk = gp .. ca
  local s = redis.call('GET', gk)
  if not s then
    return
  end
  local t = s .. ' '
  local p = string.find(t, ' ' .. id .. ' ', 1, true)
  if not p then
    return
  end
  local rest = string.sub(t, 1, p - 1) .. string.sub(t, p + #id + 1, -2)
  if rest == '' then
    redis.call('DEL', gk)
    redis.call('ZREM', ix, '#' .. ca)
  else
    redis.call('SET', gk, rest)
  end
end
