-- Turns one of docs/*.md into a man page (pandoc -t man -L man.lua).
--
-- The page's shape: its first heading is "# NAME: what it is"; the text
-- under it, before the first "##", is the description; a "## Synopsis"
-- section holds the synopsis.  The man page gets NAME ("NAME \- what it
-- is"), SYNOPSIS, DESCRIPTION, then the other "##" sections in order, each
-- heading one level up and upper-cased.  Links to the other pages become
-- their man page names; other relative links keep only their text.
-- Metadata: section (1, 5, ...) and footer, given by docs/meson.build.

local man_of = {
  ['cli.md'] = 'sandbox-libkrun(1)',
  ['configuration.md'] = 'sandbox-libkrun.yaml(5)',
}

local function fail(msg)
  io.stderr:write('man.lua: ' .. msg .. '\n')
  os.exit(1)
end

-- Headings one level up, so "##" is a man section and "###" a subsection.
local function promote(blocks)
  return pandoc.List(blocks):map(function(b)
    if b.t == 'Header' then
      b.level = math.max(b.level - 1, 1)
    end
    return b
  end)
end

local function section(title, blocks)
  local out = pandoc.List({ pandoc.Header(1, pandoc.Str(title)) })
  out:extend(promote(blocks))
  return out
end

-- A table becomes a list of terms, which fits a terminal's width where
-- tbl's narrow columns would not: the first cell is the term; the middle
-- cells follow as "header: cell" lines, and the last cell is the text.
function Table(tbl)
  local t = pandoc.utils.to_simple_table(tbl)
  local items = pandoc.List()
  for _, row in ipairs(t.rows) do
    local term = pandoc.utils.blocks_to_inlines(row[1])
    local text = pandoc.List()
    for i = 2, #row do
      local cell = pandoc.utils.blocks_to_inlines(row[i])
      local head = pandoc.utils.stringify(t.headers[i] or {})
      local empty = pandoc.utils.stringify(cell):match('^[%s\u{2014}]*$') ~= nil
      if i == #row then
        text:extend(cell)
      elseif not empty then
        if head ~= '' then
          text:extend({ pandoc.Emph({ pandoc.Str(head .. ':') }), pandoc.Space() })
        end
        text:extend(cell)
        text:insert(pandoc.RawInline('man', '\n.br\n'))
      end
    end
    items:insert({ term, { pandoc.Para(text) } })
  end
  -- .PP first: the list's indent is the page's, not a list's before it.
  return { pandoc.RawBlock('man', '.PP'), pandoc.DefinitionList(items) }
end

-- "\|" is how a markdown table writes "|" in a code span.
function Code(code)
  code.text = code.text:gsub('\\|', '|')
  return code
end

function Link(link)
  local target = link.target
  if target:match('^%a[%w+.-]*:') then
    return nil -- an absolute URL: pandoc prints it after the text
  end
  local page = man_of[target:gsub('#.*$', ''):gsub('^.*/', '')]
  if page ~= nil then
    local text = pandoc.utils.stringify(link.content)
    if text == target or man_of[text] ~= nil then
      return pandoc.Str(page)
    end
    local out = pandoc.List(link.content)
    out:extend({ pandoc.Space(), pandoc.Str('(' .. page .. ')') })
    return out
  end
  return link.content
end

function Pandoc(doc)
  local blocks = doc.blocks
  local first = blocks[1]
  if first == nil or first.t ~= 'Header' or first.level ~= 1 then
    fail('the page must begin with "# NAME: what it is"')
  end
  local title = pandoc.utils.stringify(first.content)
  local name, what = title:match('^(%S+): (.+)$')
  if name == nil then
    fail('the first heading must read "NAME: what it is", not "' .. title .. '"')
  end

  -- The intro and the "##" sections, in order.
  local intro, sections, current = pandoc.List(), pandoc.List(), nil
  for i = 2, #blocks do
    local b = blocks[i]
    if b.t == 'Header' and b.level == 1 then
      fail('a second "#" heading: ' .. pandoc.utils.stringify(b.content))
    elseif b.t == 'Header' and b.level == 2 then
      current = { title = pandoc.utils.stringify(b.content), blocks = pandoc.List() }
      sections:insert(current)
    elseif current == nil then
      intro:insert(b)
    else
      current.blocks:insert(b)
    end
  end
  if #intro == 0 then
    fail('no description under the first heading')
  end

  local out = pandoc.List()
  out:insert(pandoc.Header(1, pandoc.Str('NAME')))
  out:insert(pandoc.Para({ pandoc.Str(name), pandoc.Space(), pandoc.Str('-'), pandoc.Space(),
    pandoc.Str(what) }))
  local synopsis = nil
  for _, s in ipairs(sections) do
    if s.title:lower() == 'synopsis' then
      synopsis = s
    end
  end
  if synopsis == nil then
    fail('no "## Synopsis" section')
  end
  out:extend(section('SYNOPSIS', synopsis.blocks))
  out:extend(section('DESCRIPTION', intro))
  for _, s in ipairs(sections) do
    if s ~= synopsis then
      out:extend(section(s.title:upper(), s.blocks))
    end
  end

  local section_no = doc.meta.section and pandoc.utils.stringify(doc.meta.section) or '1'
  doc.meta.title = pandoc.MetaInlines({ pandoc.Str(name:upper()) })
  doc.meta.section = pandoc.MetaInlines({ pandoc.Str(section_no) })
  doc.meta.header = doc.meta.header or pandoc.MetaInlines({ pandoc.Str('sandbox-libkrun') })
  return pandoc.Pandoc(out, doc.meta)
end
