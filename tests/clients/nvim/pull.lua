-- Pull diagnostics in the real Neovim (0.11+ pulls `textDocument/diagnostic` on didOpen/didChange
-- when the server offers it): opens a buggy file, waits for the diagnostic in the *pull* namespace,
-- checks nothing came by push, edits the line the way a person would (nvim_buf_set_text) and waits
-- for the pulled diagnostics to change. Writes what it saw as JSON to $WH_RESULT.
--   WH_SERVER_CMD (JSON list), WH_FILE, WH_RULE, WH_LINE (1-based), WH_COL/WH_END_COL (0-based),
--   WH_NEW_TEXT (replaces [WH_COL, WH_END_COL) on WH_LINE), WH_RESULT, WH_TIMEOUT_MS
local result = { ok = false, steps = {} }
local t0 = vim.uv.hrtime()
local function step(name) table.insert(result.steps, { step = name, ms = math.floor((vim.uv.hrtime() - t0) / 1e6) }) end
local function finish()
  local f = assert(io.open(os.getenv("WH_RESULT"), "w"))
  f:write(vim.json.encode(result))
  f:close()
end
local timeout = tonumber(os.getenv("WH_TIMEOUT_MS") or "60000")
local function wait(what, predicate)
  if not vim.wait(timeout, predicate, 20) then error("timed out waiting for " .. what, 0) end
end
local function codes(diagnostics)
  local out = {}
  for _, d in ipairs(diagnostics) do table.insert(out, { code = d.code, lnum = d.lnum, col = d.col }) end
  return out
end

local ok, err = pcall(function()
  local cmd = vim.json.decode(os.getenv("WH_SERVER_CMD"))
  local file = os.getenv("WH_FILE")
  local rule, line = os.getenv("WH_RULE"), tonumber(os.getenv("WH_LINE")) - 1
  vim.cmd.edit(vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  local id = vim.lsp.start({ name = "warp-harness", cmd = cmd, root_dir = vim.fs.dirname(file) }, { bufnr = buf })
  wait("the client", function() return vim.lsp.get_client_by_id(id) ~= nil and vim.lsp.get_client_by_id(id).initialized end)
  step("attached")
  local client = vim.lsp.get_client_by_id(id)
  result.server_pull = client.server_capabilities.diagnosticProvider ~= nil
  local pull_ns = vim.lsp.diagnostic.get_namespace(id, true)
  local push_ns = vim.lsp.diagnostic.get_namespace(id, false)
  local function pulled() return vim.diagnostic.get(buf, { namespace = pull_ns }) end
  wait("pulled diagnostics", function()
    for _, d in ipairs(pulled()) do if d.code == rule and d.lnum == line then return true end end
    return false
  end)
  step("pulled")
  result.before = codes(pulled())
  result.pushed_before = #vim.diagnostic.get(buf, { namespace = push_ns })
  vim.api.nvim_buf_set_text(buf, line, tonumber(os.getenv("WH_COL")), line, tonumber(os.getenv("WH_END_COL")), { os.getenv("WH_NEW_TEXT") })
  wait("the edit's pulled diagnostics", function()
    for _, d in ipairs(pulled()) do if d.code == rule and d.lnum == line then return false end end
    return true
  end)
  step("re-pulled")
  result.after = codes(pulled())
  result.pushed_after = #vim.diagnostic.get(buf, { namespace = push_ns })
  result.ok = true
end)
if not ok then result.error = tostring(err) end
finish()
vim.cmd("qa!")
