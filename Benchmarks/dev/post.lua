-- wrk script for Benchmarks/dev/ingest.sh: batches of 100 fresh reading events, a random user's
-- token per batch (one per line in $DEV_BENCH_TOKENS); a non-200 answer goes to stderr.
local tokens = {}
for line in io.lines(os.getenv("DEV_BENCH_TOKENS")) do tokens[#tokens+1] = line end
local counter = 0
local function hex(n) local s = "" for i=1,n do s = s .. string.format("%x", math.random(0, 15)) end return s end
local function uuid() return hex(8).."-"..hex(4).."-4"..hex(3).."-a"..hex(3).."-"..hex(12) end
init = function(args) math.randomseed(os.time() * 1000 + (tonumber(tostring(args):match("0x(%x+)") or "1", 16) % 100000)) end
request = function()
  counter = counter + 1
  local t = tokens[math.random(#tokens)]
  local now = os.date("!%Y-%m-%dT%H:%M:%SZ")
  local ev = {}
  for i=1,100 do ev[i] = '{"eventId":"'..uuid()..'","clientSessionId":"s1","readingTargetType":"knowledgeSource","materialId":"m1","eventType":"heartbeat","position":{"page":1,"totalPages":10},"activeSecondsDelta":1,"clientTimestamp":"'..now..'","clientTimezoneOffsetMinutes":0,"sequence":'..(counter*100+i)..',"platform":"ios","appVersion":"1.0"}' end
  return wrk.format("POST", "/learning/reading-events/batch", {["Authorization"]="Bearer "..t, ["Content-Type"]="application/json"}, '{"events":['..table.concat(ev, ",")..']}')
end
response = function(status, headers, body) if status ~= 200 then io.stderr:write(status .. " " .. body:sub(1,200) .. "\n") end end
