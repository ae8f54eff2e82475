--[[
  KEYS: [1] state hash. An open breaker's openUntil moves to now (Redis time); any other state is left.
]]
local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('HGET', KEYS[1], 'state') == 'open' then redis.call('HSET', KEYS[1], 'openUntil', now) end
return 0
