/**
 * `/bots/{bot_uuid}` accepts whatever Python's `uuid.UUID(text)` accepts: it removes every "urn:"
 * and "uuid:", strips braces from both ends, removes every hyphen, then needs exactly 32 characters
 * that `int(text, 16)` parses (which tolerates surrounding whitespace, a sign, a 0x prefix and
 * single underscores between digits). Returns the canonical lowercase hyphenated form, or null
 * (→ 404 Bot not found).
 */
export function normalizeBotId(raw: string): string | null {
  const hex = raw.replaceAll('urn:', '').replaceAll('uuid:', '').replace(/^[{}]+|[{}]+$/g, '').replaceAll('-', '');
  if (hex.length !== 32) return null;
  const value = parsePythonHexInt(hex);
  if (value === null || value < 0n || value >= 1n << 128n) return null;
  const h = value.toString(16).padStart(32, '0');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

function parsePythonHexInt(text: string): bigint | null {
  const m = /^\s*([+-]?)(?:0[xX](_?))?([0-9a-fA-F](?:_?[0-9a-fA-F])*)\s*$/.exec(text);
  if (!m) return null;
  const value = BigInt(`0x${m[3].replaceAll('_', '')}`);
  return m[1] === '-' ? -value : value;
}
