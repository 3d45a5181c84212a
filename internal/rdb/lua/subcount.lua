-- subcount.lua: move deliveries in their subscriptions' counts. A move
-- counts only in the counts of the subscription its delivery was made for:
-- not when the subscription is gone, nor when it was deleted and put again
-- under its name after the delivery's job was created (its incarnation,
-- the field "<sub>:g", is its created_at; a subscription put before
-- incarnations were kept has none and counts every move).
-- KEYS[1] the topic's subscriptions, KEYS[2] their counts
-- ARGV: five a move: the subscription's name, the delivery job's created
-- time (ms), and the deltas of pending, delivered and dead
-- Reply: how many moves were counted.
local counted = 0
for i = 1, #ARGV, 5 do
  local sub = ARGV[i]
  if redis.call('HEXISTS', KEYS[1], sub) == 1 then
    local born = tonumber(redis.call('HGET', KEYS[2], sub .. ':g') or '0')
    if tonumber(ARGV[i + 1]) >= born then
      local suffixes = {':p', ':d', ':x'}
      for j = 1, 3 do
        local d = tonumber(ARGV[i + 1 + j])
        if d ~= 0 then
          redis.call('HINCRBY', KEYS[2], sub .. suffixes[j], d)
        end
      end
      counted = counted + 1
    end
  end
end
return counted
