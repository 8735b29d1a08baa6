-- wrk script of bench/load.py: request kinds by weight, new uploads from a file of bodies.
-- Set by bench/load.py through the environment:
--   LOAD_KINDS  "page:60,top:15,flame:10,raw:10,upload:5" (weights)
--   LOAD_PIDS   stored profile ids, comma-separated
--   LOAD_BODIES file of upload bodies, each as 8 decimal digits of length then the bytes
local kinds, total = {}, 0
for name, weight in string.gmatch(os.getenv("LOAD_KINDS"), "(%w+):(%d+)") do
  total = total + tonumber(weight)
  table.insert(kinds, {name = name, upto = total})
end
local pids = {}
for pid in string.gmatch(os.getenv("LOAD_PIDS") or "", "[^,]+") do table.insert(pids, pid) end

local threads, counter = {}, 0
function setup(thread)
  counter = counter + 1
  thread:set("index", counter)
  table.insert(threads, thread)
end

local bodies, next_body = {}, 1
function init(args)
  local path = os.getenv("LOAD_BODIES")
  if path == nil or path == "" then return end
  local f = assert(io.open(path, "rb"))
  local data = f:read("*a")
  f:close()
  local pos, n = 1, 0
  local stride = tonumber(os.getenv("LOAD_THREADS") or "1")
  while pos <= #data do
    local len = tonumber(data:sub(pos, pos + 7))
    n = n + 1
    if n % stride == index - 1 then table.insert(bodies, data:sub(pos + 8, pos + 7 + len)) end
    pos = pos + 8 + len
  end
end

function request()
  local r = math.random(total)
  local kind
  for _, k in ipairs(kinds) do
    if r <= k.upto then kind = k.name break end
  end
  local pid = pids[math.random(math.max(#pids, 1))]
  if kind == "upload" then
    local body = bodies[next_body]
    next_body = next_body % #bodies + 1
    return wrk.format("POST", "/", {["Content-Type"] = "application/octet-stream"}, body)
  elseif kind == "page" then return wrk.format("GET", "/" .. pid, {["Accept"] = "text/html"})
  elseif kind == "top" then return wrk.format("GET", "/" .. pid .. "/top")
  elseif kind == "flame" then
    return wrk.format("GET", "/api/v1/profiles/" .. pid .. "/flamegraph",
      {["Accept-Encoding"] = "gzip"})
  elseif kind == "raw" then return wrk.format("GET", "/" .. pid .. "/raw")
  end
  return wrk.format("GET", "/")
end
