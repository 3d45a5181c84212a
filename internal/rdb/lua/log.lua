-- log.lua, put in front of the scripts that write a job's attempt log. The
-- log is a JSON array kept in pieces of at most 64 bytes, in fields log,
-- log1, ..., log15, so that the job's hash stays a compact listpack (see
-- listpackValue in jobs.go); a log too long for 16 pieces is kept whole.
local LOG_FIELDS = {'log'}
for i = 1, 15 do
  LOG_FIELDS[#LOG_FIELDS + 1] = 'log' .. i
end

-- readLog joins the pieces get(field) returns; it also returns how many
-- pieces there were.
local function readLog(get)
  local parts = {}
  for _, f in ipairs(LOG_FIELDS) do
    local p = get(f)
    if not p then
      break
    end
    parts[#parts + 1] = p
  end
  local s = table.concat(parts)
  if s == '' then
    s = '[]'
  end
  return cjson.decode(s), #parts
end

-- logFields returns the field, value pairs that store log, and the fields
-- of an older log's pieces (had of them) that it no longer uses.
local function logFields(log, had)
  local s = cjson.encode(log)
  local out = {'log', s}
  if #s > 64 and #s <= 64 * #LOG_FIELDS then
    out = {}
    for i = 1, #s, 64 do
      out[#out + 1] = LOG_FIELDS[#out / 2 + 1]
      out[#out + 1] = string.sub(s, i, i + 63)
    end
  end
  local stale = {}
  for i = #out / 2 + 1, had do
    stale[#stale + 1] = LOG_FIELDS[i]
  end
  return out, stale
end

