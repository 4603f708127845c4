-- wrk script for `make bench`: POST /message with a communicator's bearer token, alternating an Alert
-- and an Information topic. Counts 201s and other answers, and writes the msi_key of every 201 to
-- BENCH_KEYS_FILE so the bench can check each acknowledged message is in the database.
-- Environment: BENCH_TOKEN, BENCH_ALERT_TOPIC, BENCH_INFO_TOPIC, BENCH_KEYS_FILE.

local threads = {}

function setup(thread)
    table.insert(threads, thread)
end

local function message(distribution, topic)
    local text = "Buses on the 7 and 12 routes leave from the sports hall car park this afternoon because of "
        .. "roadworks on Station Road. Staff will be there from 15:05 to show the way; students who walk home "
        .. "are not affected. Please tell your parents or carers if they collect you by car."
    return string.format(
        '{"title":"Bus stop moved today","desc":"Buses leave from the sports hall car park at 15:15",'
            .. '"message":"%s","topic_key":"%s","distribution":"%s"}',
        text, topic, distribution)
end

-- Globals: read by done() through thread:get.
created = 0
other = 0
local requests = {}
local sent = 0
local keys

function init(args)
    local headers = {
        ["Content-Type"] = "application/json",
        ["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN"),
    }
    requests[1] = wrk.format("POST", "/message", headers, message("Alert", os.getenv("BENCH_ALERT_TOPIC")))
    requests[2] = wrk.format("POST", "/message", headers, message("Information", os.getenv("BENCH_INFO_TOPIC")))
    keys = assert(io.open(os.getenv("BENCH_KEYS_FILE"), "w"))
    keys:setvbuf("line")  -- wrk may exit without closing the thread's Lua state
end

function request()
    sent = sent + 1
    return requests[sent % 2 + 1]
end

function response(status, headers, body)
    if status == 201 then
        created = created + 1
        -- The key, the distribution (components to expect at the fake) and the stored timestamp (the relay's lag).
        keys:write((body:match('"msi_key"%s*:%s*"(%x+)"') or "?"), " ",
                   (body:match('"distribution"%s*:%s*"(%a+)"') or "?"), " ",
                   (body:match('"timestamp"%s*:%s*(%d+)') or "0"), "\n")
    else
        other = other + 1
    end
end

function done(summary, latency, requests)
    local total_created, total_other = 0, 0
    for _, thread in ipairs(threads) do
        total_created = total_created + thread:get("created")
        total_other = total_other + thread:get("other")
    end
    io.write(string.format("statuses: created=%d other=%d\n", total_created, total_other))
end
