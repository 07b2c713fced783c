-- Drives Neovim's built-in LSP client against the real warp-harness server, headless:
--   nvim --headless -u NONE -i NONE -n -l drive.lua
-- Opens a buggy file, waits for the diagnostic, requests the code actions at it, applies the
-- fix through vim.lsp.buf.code_action{apply = true}, writes the buffer and waits for the
-- diagnostic to clear. Writes what it saw as JSON to $WH_RESULT; exits 0 only when all of it held.
--
-- Environment:
--   WH_SERVER_CMD  the server's command line, JSON list (e.g. ["python", "-m", "warp_harness", "serve"])
--   WH_FILE        the buggy file (a copy: it is edited and written)
--   WH_MODE        "config": vim.lsp.config + vim.lsp.enable (Neovim 0.11+);
--                  "start":  a FileType autocommand calling vim.lsp.start (Neovim 0.8+)
--   WH_RULE, WH_LINE, WH_FIX_TITLE, WH_NEW_TEXT   the expected diagnostic (line is 1-based) and fix
--   WH_ACTION      "quickfix" (default): apply that diagnostic's fix;
--                  "fixall": apply source.fixAll.warp-harness, expecting every text of the JSON
--                  list WH_NEW_TEXTS in the buffer and WH_REMAINING diagnostics left
--   WH_RESULT      where the JSON report goes
--   WH_TIMEOUT_MS  each wait (default 60000)

local result = { steps = {}, ok = false }
local t0 = vim.uv and vim.uv.hrtime() or vim.loop.hrtime()

local function now_ms()
  local t = vim.uv and vim.uv.hrtime() or vim.loop.hrtime()
  return math.floor((t - t0) / 1e6)
end

local function step(name)
  table.insert(result.steps, { step = name, ms = now_ms() })
end

local function write_result()
  local path = os.getenv("WH_RESULT")
  if path then
    local f = assert(io.open(path, "w"))
    f:write(vim.json.encode(result))
    f:close()
  end
end

-- vim.lsp.get_clients is 0.10+; get_active_clients before
local get_clients = vim.lsp.get_clients or vim.lsp.get_active_clients

local timeout = tonumber(os.getenv("WH_TIMEOUT_MS") or "60000")

local function wait(what, predicate)
  if not vim.wait(timeout, predicate, 20) then
    error("timed out after " .. timeout .. " ms waiting for " .. what, 0)
  end
end

local function ours(d, rule, lnum)
  return d.code == rule and d.lnum == lnum
end

local function summarize(diagnostics)
  local out = {}
  for _, d in ipairs(diagnostics) do
    table.insert(out, { code = d.code, lnum = d.lnum, col = d.col, source = d.source, message = d.message })
  end
  return out
end

local apply_quick_fix -- defined below main

local function main()
  local cmd = vim.json.decode((assert(os.getenv("WH_SERVER_CMD"), "WH_SERVER_CMD")))
  local file = assert(os.getenv("WH_FILE"), "WH_FILE")
  local mode = os.getenv("WH_MODE") or "config"
  local rule = assert(os.getenv("WH_RULE"), "WH_RULE")
  local lnum = tonumber((assert(os.getenv("WH_LINE"), "WH_LINE"))) - 1
  result.nvim = tostring(vim.version())
  result.mode = mode

  -- -u NONE leaves filetype detection off; the client attaches on the python filetype
  vim.cmd("filetype on")
  local init_options = { settings = { debounce_ms = 50, daemon = false } }

  if mode == "config" then
    vim.lsp.config("warp_harness", {
      cmd = cmd,
      filetypes = { "python" },
      root_markers = { "pyproject.toml", ".git" },
      init_options = init_options,
    })
    vim.lsp.enable("warp_harness")
  elseif mode == "start" then
    vim.api.nvim_create_autocmd("FileType", {
      pattern = "python",
      callback = function(args)
        local root = vim.fs.dirname(vim.fs.find({ "pyproject.toml", ".git" }, {
          upward = true,
          path = vim.fs.dirname(vim.api.nvim_buf_get_name(args.buf)),
        })[1])
        vim.lsp.start({ name = "warp-harness", cmd = cmd, root_dir = root, init_options = init_options })
      end,
    })
  else
    error("unknown WH_MODE " .. mode, 0)
  end

  vim.cmd.edit(vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  result.filetype = vim.bo[buf].filetype
  wait("the client to attach", function()
    return #get_clients({ bufnr = buf }) > 0
  end)
  local client = get_clients({ bufnr = buf })[1]
  result.client = client.name
  step("attached")

  local target
  wait(rule .. " on line " .. (lnum + 1), function()
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      if ours(d, rule, lnum) then
        target = d
        return true
      end
    end
    return false
  end)
  result.diagnostics_before = summarize(vim.diagnostic.get(buf))
  step("diagnostics")

  -- the code actions offered at the diagnostic, as any client would request them
  vim.api.nvim_win_set_cursor(0, { target.lnum + 1, target.col })
  local lsp_diags = {}
  for _, d in ipairs(vim.diagnostic.get(buf, { lnum = target.lnum })) do
    local raw = d.user_data and d.user_data.lsp
    if raw then
      table.insert(lsp_diags, raw)
    end
  end
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    range = {
      start = { line = target.lnum, character = target.col },
      ["end"] = { line = target.end_lnum or target.lnum, character = target.end_col or target.col },
    },
    context = { diagnostics = lsp_diags, only = { "quickfix" } },
  }
  local responses = vim.lsp.buf_request_sync(buf, "textDocument/codeAction", params, timeout) or {}
  result.actions = {}
  for _, response in pairs(responses) do
    if response.err then
      error("textDocument/codeAction failed: " .. vim.inspect(response.err), 0)
    end
    for _, action in ipairs(response.result or {}) do
      table.insert(result.actions, { title = action.title, kind = action.kind })
    end
  end
  step("code actions listed")

  if os.getenv("WH_ACTION") == "fixall" then
    -- every safe fix in the file at once, as a fix-all-on-save mapping would
    local texts = vim.json.decode((assert(os.getenv("WH_NEW_TEXTS"), "WH_NEW_TEXTS")))
    local remaining = tonumber((assert(os.getenv("WH_REMAINING"), "WH_REMAINING")))
    local before_all = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
    vim.lsp.buf.code_action({ context = { only = { "source.fixAll.warp-harness" } }, apply = true })
    wait("source.fixAll to change the buffer", function()
      local now = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
      if now == before_all then
        return false
      end
      for _, text in ipairs(texts) do
        if not now:find(text, 1, true) then
          return false
        end
      end
      return true
    end)
    step("fix-all applied")
    vim.cmd.write()
    step("written")
    wait(remaining .. " diagnostic(s) left", function()
      return #vim.diagnostic.get(buf) == remaining
    end)
    result.diagnostics_after = summarize(vim.diagnostic.get(buf))
    step("diagnostics cleared")
  else
    apply_quick_fix(buf, target, lnum, lsp_diags)
  end

  for _, c in ipairs(get_clients()) do
    vim.lsp.stop_client(c.id)
  end
  vim.wait(5000, function()
    return #get_clients() == 0
  end, 20)
  step("stopped")
  result.ok = true
end

apply_quick_fix = function(buf, target, lnum, lsp_diags)
  local rule = os.getenv("WH_RULE")
  local title = os.getenv("WH_FIX_TITLE")
  local new_text = os.getenv("WH_NEW_TEXT")
  -- apply the fix the way a person would: the code-action command, filtered to its title
  local before = vim.api.nvim_buf_get_lines(buf, lnum, lnum + 1, false)[1]
  vim.lsp.buf.code_action({
    context = { only = { "quickfix" }, diagnostics = lsp_diags },
    filter = function(action)
      return action.title:find(title, 1, true) ~= nil
    end,
    apply = true,
  })
  wait("the fix to change line " .. (lnum + 1), function()
    local line = vim.api.nvim_buf_get_lines(buf, lnum, lnum + 1, false)[1]
    return line ~= before and line:find(new_text, 1, true) ~= nil
  end)
  result.line_after = vim.api.nvim_buf_get_lines(buf, lnum, lnum + 1, false)[1]
  step("fix applied")

  vim.cmd.write()
  step("written")
  wait("the " .. rule .. " diagnostic on line " .. (lnum + 1) .. " to clear", function()
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      if ours(d, rule, lnum) and d.message == target.message then
        return false
      end
    end
    return true
  end)
  result.diagnostics_after = summarize(vim.diagnostic.get(buf))
  step("diagnostic cleared")
end

local ok, err = pcall(main)
if not ok then
  result.error = tostring(err)
  result.diagnostics_at_failure = summarize(vim.diagnostic.get())
end
write_result()
os.exit(ok and 0 or 1)
