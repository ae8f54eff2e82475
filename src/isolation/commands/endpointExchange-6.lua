--[[
  One round trip for one endpoint of the endpoint gate (src/isolation/endpointGate.ts): first a
  worker's slot lease (its outcomes, then its new size), then the releases, then the admits, each
  in order.
  KEYS: [1] state hash, [2] holders zset, [3] index zset (this tenant's state for the endpoint);
        [4] the endpoint's holders across tenants, [5] its active tenants, [6] its waiting
        tenants (zsets; N2's ceiling per canonical endpoint, shared fairly).
  ARGV: [1..10] the policy: cooldownMs, maxCooldownMs, autoDisableMs, initialLimit, windowMs,
        failureThreshold, minRequests, failureRatio, touchMs, stateTtlMs;
        [11] tenant, [12] ceiling (slots of the endpoint across tenants; 0 = none);
        [13..22] the lease ('' = none): leaseId, held, want, keep, need, durationMs, renew, cap, key, m;
        then (outcome, count) x m (the lease's outcomes since its last call, run-length, in order);
        then r, then (token, outcome) x r, then (token, key, cap, leaseMs, rate) x n.
  outcome: ok, slow (a success that took long), fail, none. cap: the adaptive limit's ceiling
  (workers pass the configured cap, or LIMIT_MAX when none is); 0 = no limit at all (a
  decision reporting its outcome).
  The adaptive limit mirrors src/isolation/adaptiveLimit.ts nextLimit: ok +1 up to the cap,
  slow x0.9 not below initialLimit, fail halved down to 1.
  A lease is `held` members `<leaseId>#<i>` of the holders zset (so every count of the slots
  in use, ZCARD, includes them), all scored with one expiry; it grows to what the worker wants,
  within the limit less the other holders' slots and a fair share of it among the workers leasing
  the endpoint (`leasers`), never below `keep` (the most the worker may have in use until this
  answer arrives), and grants nothing while the breaker is not closed.
  The ceiling (when > 0): every slot taken under it is also a member of KEYS[4], so the receiver
  never has more than `ceiling` attempts of all tenants at once. A tenant asks (KEYS[5], scored
  with the time) and, refused by the ceiling or its share while its own limit had room, waits
  (KEYS[6]). While another tenant waits, a tenant may hold at most its share,
  ceil(ceiling / active tenants), of the endpoint; while none waits it may use any idle slot.
  Active and waiting mean within the last ACTIVE_MS.
  Returns (transition, autoDisable) x r, then (code, retryAt, transition, inFlight) x n;
  code 0 admitted, 1 busy, 2 rate, 3 open, 4 probing; then, with a lease: held, allowed,
  inFlight, state (0 closed, 1 open, 2 half_open), the lease's remaining ms, then
  (transition, autoDisable) x m.
]]
local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local FIELDS = {'state', 'openUntil', 'probe', 'probeUntil', 'tat', 'limit', 'seenAt', 'cap', 'fails', 'wStart', 'wTotal', 'wFail', 'cooldown', 'failingSince', 'lastSuccessAt', 'lastFailureAt', 'leasers'}
local f = redis.call('HMGET', KEYS[1], unpack(FIELDS))
local fresh = not f[7]
local st = {}
for i, name in ipairs(FIELDS) do
  local v = f[i]
  if v and i ~= 1 and i ~= 3 and i ~= 17 then v = tonumber(v) end
  st[name] = v
end
st.state = st.state or 'closed'
st.cap = st.cap or 0
st.fails = st.fails or 0
st.wStart = st.wStart or now
st.wTotal = st.wTotal or 0
st.wFail = st.wFail or 0
local BASE, MAXC, AUTO, INITIAL = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local WINDOW, THRESHOLD, MIN_REQUESTS, RATIO = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local TOUCH, TTL = tonumber(ARGV[9]), tonumber(ARGV[10])
local TENANT, CEIL = ARGV[11], tonumber(ARGV[12])
local P = 12
local dirty = false
local out = {}

-- The ceiling across tenants (read once per call, when there is one): the endpoint's slots taken
-- by all tenants (g), this tenant's fair share, and whether another tenant is waiting for one.
local ACTIVE_MS = 3000
local g, share, othersWaiting = nil, 0, false
local function readCeiling()
  if g ~= nil then return end
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
  g = redis.call('ZCARD', KEYS[4])
  redis.call('ZADD', KEYS[5], now, TENANT)
  share = math.ceil(CEIL / math.max(1, redis.call('ZCOUNT', KEYS[5], now - ACTIVE_MS, '+inf')))
  local waiting = redis.call('ZCOUNT', KEYS[6], now - ACTIVE_MS, '+inf')
  local own = tonumber(redis.call('ZSCORE', KEYS[6], TENANT) or '0')
  if own >= now - ACTIVE_MS then waiting = waiting - 1 end
  othersWaiting = waiting > 0
end
local function wait() redis.call('ZADD', KEYS[6], now, TENANT) end

-- What one attempt's outcome does to the breaker and the adaptive limit (token: the attempt's, nil for a leased slot's).
local function applyOutcome(outcome, token)
  local transition, disable = '', 0
  if outcome == 'none' then
    -- A probe that said nothing about the endpoint (cancelled, local error): the next admit probes.
    if token and st.probe == token then st.probe = false; st.probeUntil = false; dirty = true end
  else
    dirty = true
    if st.cap > 0 then
      local limit = math.min(st.limit or INITIAL, st.cap)
      if outcome == 'ok' then st.limit = math.min(st.cap, limit + 1)
      elseif outcome == 'slow' then
        if limit > INITIAL then st.limit = math.max(INITIAL, math.floor(limit * 0.9)) else st.limit = limit end
      else st.limit = math.max(1, math.floor(limit / 2)) end
    end
    -- A slow success is a success for the breaker.
    if outcome == 'slow' then outcome = 'ok' end
    if now - st.wStart > WINDOW then st.wStart, st.wTotal, st.wFail = now, 0, 0 end
    if outcome == 'ok' then
      st.failingSince = false
      st.lastSuccessAt = now
      st.fails = 0
      if st.state == 'half_open' then
        st.state, st.wStart, st.wTotal, st.wFail, st.cooldown = 'closed', now, 0, 0, BASE
        st.probe, st.probeUntil, st.openUntil = false, false, false
        transition = 'closed'
      elseif st.state == 'closed' then
        st.wTotal = st.wTotal + 1
      end
    else
      st.failingSince = st.failingSince or now
      st.lastFailureAt = now
      if AUTO > 0 and now - st.failingSince >= AUTO then disable = 1 end
      if st.state == 'half_open' then
        if token and st.probe == token then
          local cooldown = math.min((st.cooldown or BASE) * 2, MAXC)
          st.state, st.openUntil, st.cooldown, st.probe, st.probeUntil = 'open', now + cooldown, cooldown, false, false
          transition = 'open'
        end
      elseif st.state == 'closed' then
        st.fails, st.wTotal, st.wFail = st.fails + 1, st.wTotal + 1, st.wFail + 1
        if st.fails >= THRESHOLD or (st.wTotal >= MIN_REQUESTS and st.wFail / st.wTotal >= RATIO) then
          st.state, st.openUntil, st.cooldown, st.wStart, st.wTotal, st.wFail = 'open', now + BASE, BASE, now, 0, 0
          transition = 'open'
        end
      end
    end
  end
  return transition, disable
end

-- The lease's outcomes, in order: a run of fast successes on a closed breaker at once (what as many single ones do).
local LEASE = ARGV[13]
local runOut = {}
local m = tonumber(ARGV[22])
for i = 23, 22 + 2 * m, 2 do
  local outcome, count = ARGV[i], tonumber(ARGV[i + 1])
  local transition, disable = '', 0
  if outcome == 'ok' and st.state == 'closed' then
    dirty = true
    if st.cap > 0 then st.limit = math.min(st.cap, math.min(st.limit or INITIAL, st.cap) + count) end
    if now - st.wStart > WINDOW then st.wStart, st.wTotal, st.wFail = now, 0, 0 end
    st.failingSince, st.lastSuccessAt, st.fails, st.wTotal = false, now, 0, st.wTotal + count
  elseif outcome ~= 'none' then
    for _ = 1, count do
      local t1, d1 = applyOutcome(outcome, nil)
      if t1 ~= '' then transition = t1 end
      if d1 == 1 then disable = 1 end
    end
  end
  runOut[#runOut + 1] = transition
  runOut[#runOut + 1] = disable
end
P = 22 + 2 * m

local r = tonumber(ARGV[P + 1])
local zrem = {}
for i = P + 2, P + 1 + 2 * r, 2 do
  local token = ARGV[i]
  zrem[#zrem + 1] = token
  local transition, disable = applyOutcome(ARGV[i + 1], token)
  out[#out + 1] = transition
  out[#out + 1] = disable
end
if #zrem > 0 then
  redis.call('ZREM', KEYS[2], unpack(zrem))
  redis.call('ZREM', KEYS[4], unpack(zrem))
end

local inflight = nil
local seen = nil
local leaseOut = nil
if LEASE ~= '' then
  local held, want, keep, need, duration = tonumber(ARGV[14]), tonumber(ARGV[15]), tonumber(ARGV[16]), tonumber(ARGV[17]), tonumber(ARGV[18])
  local renew, cap, key = ARGV[19] == '1', tonumber(ARGV[20]), ARGV[21]
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  inflight = redis.call('ZCARD', KEYS[2])
  -- Its members share one expiry: the first one's score says whether the lease is still there (a flush or a lapse removes them all).
  local expiry = tonumber(redis.call('ZSCORE', KEYS[2], LEASE .. '#0') or '0')
  local mine = expiry > 0 and held or 0
  -- The other workers leasing this endpoint (named with their last call within LEASERS_MS): the limit is shared fairly.
  local LEASERS_MS = 2000
  local leasers, n = {}, 1
  for id, at in string.gmatch(st.leasers or '', '([^ =]+)=(%d+)') do
    if id ~= LEASE and now - tonumber(at) < LEASERS_MS then leasers[#leasers + 1] = id .. '=' .. at; n = n + 1 end
  end
  -- Mirrored under the ceiling: whether this lease's members are in KEYS[4] too.
  local gmine = 0
  if CEIL > 0 then
    readCeiling()
    if mine > 0 and redis.call('ZSCORE', KEYS[4], LEASE .. '#0') then gmine = mine end
  end
  local grant = 0
  if st.state == 'closed' and want > 0 then
    local limit = math.min(cap, st.limit or INITIAL)
    local own = math.min(want, limit - (inflight - mine), math.ceil(limit / n))
    if CEIL > 0 then
      -- Within the ceiling, and within the tenant's share while another tenant waits.
      limit = math.min(limit, CEIL)
      if othersWaiting then limit = math.min(limit, share) end
      grant = math.min(want, limit - (inflight - mine), math.ceil(limit / n), CEIL - (g - gmine))
      if grant < math.min(own, need) then wait() end
    else
      grant = own
    end
    grant = math.max(0, grant)
  end
  local size = math.max(grant, keep)
  -- Named while it asks or holds: a worker refused everything still counts for the next share.
  if want > 0 or size > 0 then leasers[#leasers + 1] = LEASE .. '=' .. now end
  local named = table.concat(leasers, ' ')
  if named ~= (st.leasers or '') then st.leasers = named ~= '' and named or false; dirty = true end
  if size < mine then
    local gone = {}
    for i = size, mine - 1 do gone[#gone + 1] = LEASE .. '#' .. i end
    redis.call('ZREM', KEYS[2], unpack(gone))
    redis.call('ZREM', KEYS[4], unpack(gone))
  end
  if size > 0 then
    local from = mine
    if mine == 0 or renew then from, expiry = 0, now + duration end
    -- Under the ceiling the members are the endpoint's too (all of them, if they were not yet).
    local gfrom = (CEIL > 0 and gmine == 0) and 0 or from
    local lowest = math.min(from, gfrom)
    if size > lowest then
      local add = {}
      for i = lowest, size - 1 do add[#add + 1] = expiry; add[#add + 1] = LEASE .. '#' .. i end
      if size > from then redis.call('ZADD', KEYS[2], unpack(add, 2 * (from - lowest) + 1)) end
      if CEIL > 0 then redis.call('ZADD', KEYS[4], unpack(add, 2 * (gfrom - lowest) + 1)) end
    end
    seen = { key = key, cap = cap, lease = duration }
  end
  if CEIL > 0 then g = g - gmine + size end
  inflight = inflight - mine + size
  local code = st.state == 'open' and 1 or (st.state == 'half_open' and 2 or 0)
  leaseOut = { size, grant, inflight, code, size > 0 and expiry - now or 0 }
end

local zadd = {}
for i = P + 2 + 2 * r, #ARGV, 5 do
  local token, key, cap, lease, rate = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]), tonumber(ARGV[i + 4])
  local code, retryAt, transition = 0, 0, ''
  local probing = false
  if st.state == 'open' then
    if now < (st.openUntil or 0) then code, retryAt = 3, st.openUntil else probing = true end
  elseif st.state == 'half_open' then
    if st.probe and now < (st.probeUntil or 0) then code, retryAt = 4, st.probeUntil else probing = true end
  end
  if code == 0 then
    if inflight == nil then
      redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
      inflight = redis.call('ZCARD', KEYS[2])
    end
    -- The adaptive limit the endpoint has earned (+1 per fast success, x0.9 per slow one, halved per failure), within its cap.
    if cap > 0 and inflight >= math.min(cap, st.limit or INITIAL) then
      code = 1
    elseif CEIL > 0 and (readCeiling() or g >= CEIL or (othersWaiting and inflight >= share)) then
      -- The endpoint is at its ceiling across tenants, or this tenant at its share while another waits.
      code = 1
      wait()
    elseif rate > 0 then
      local interval = 1000 / rate
      local burst = math.max(1, rate)
      local tat = math.max(st.tat or 0, now)
      local allowAt = tat - (burst - 1) * interval
      if allowAt > now then code, retryAt = 2, math.ceil(allowAt) else st.tat = tat + interval; dirty = true end
    end
  end
  if code == 0 then
    zadd[#zadd + 1] = now + lease
    zadd[#zadd + 1] = token
    inflight = inflight + 1
    if CEIL > 0 then
      redis.call('ZADD', KEYS[4], now + lease, token)
      g = g + 1
    end
    if probing then
      if st.state == 'open' then transition = 'half_open' end
      st.state, st.probe, st.probeUntil = 'half_open', token, now + lease
      dirty = true
    end
    seen = seen or { key = key, cap = 0, lease = lease }
    if cap > 0 then seen.cap = cap end
  end
  out[#out + 1] = code
  out[#out + 1] = retryAt
  out[#out + 1] = transition
  out[#out + 1] = inflight or 0
end
if #zadd > 0 then redis.call('ZADD', KEYS[2], unpack(zadd)) end

-- Bookkeeping at most once a second (and when the cap changes); a decision's report (cap 0)
-- never overwrites the workers' cap.
local touched = false
if seen and (not st.seenAt or now - st.seenAt >= TOUCH or (seen.cap > 0 and st.cap ~= seen.cap)) then
  touched = true
  if seen.cap > 0 then st.cap = seen.cap end
  st.key, st.seenAt = seen.key, now
  dirty = true
  redis.call('PEXPIRE', KEYS[2], seen.lease + TTL)
  redis.call('ZADD', KEYS[3], now, seen.key)
  redis.call('PEXPIRE', KEYS[3], TTL)
  if CEIL > 0 then
    redis.call('PEXPIRE', KEYS[4], seen.lease + TTL)
    for k = 5, 6 do
      redis.call('ZREMRANGEBYSCORE', KEYS[k], '-inf', now - ACTIVE_MS)
      redis.call('PEXPIRE', KEYS[k], TTL)
    end
  end
end
if dirty then
  local set, del = {}, {}
  for _, name in ipairs({'key', 'state', 'openUntil', 'probe', 'probeUntil', 'tat', 'limit', 'seenAt', 'cap', 'fails', 'wStart', 'wTotal', 'wFail', 'cooldown', 'failingSince', 'lastSuccessAt', 'lastFailureAt', 'leasers'}) do
    local v = st[name]
    if v == false then del[#del + 1] = name
    elseif v ~= nil and not (name == 'cap' and v == 0) then set[#set + 1] = name; set[#set + 1] = tostring(v) end
  end
  redis.call('HSET', KEYS[1], unpack(set))
  if #del > 0 then redis.call('HDEL', KEYS[1], unpack(del)) end
  -- HSET keeps a TTL: set it when the hash is new and with the once-a-second bookkeeping.
  if fresh or touched then redis.call('PEXPIRE', KEYS[1], TTL) end
end
if leaseOut then
  for _, v in ipairs(leaseOut) do out[#out + 1] = v end
  for _, v in ipairs(runOut) do out[#out + 1] = v end
end
return out
