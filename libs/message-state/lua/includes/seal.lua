--[[
  An event's seal in a reply hash (field e:<seq>) is '<number of parts>|<seal entry JSON>'.
]]
local function sealParts(seal)
  local sep = string.find(seal, '|', 1, true)
  return tonumber(string.sub(seal, 1, sep - 1)), string.sub(seal, sep + 1)
end
