/**
 * Cuts text into pieces of at most `size` characters (code points, so a surrogate pair is never split),
 * each starting `size - overlap` after the previous one. A piece ends at the last paragraph break,
 * line break, sentence end or space in its second half when there is one, so words stay whole; the
 * next piece then starts `overlap` before that end. Pieces that are only whitespace are dropped.
 */
export function chunkText(text: string, size: number, overlap: number): string[] {
  if (!Number.isInteger(size) || size < 1) throw new RangeError(`chunk size must be a positive integer, got ${size}`);
  if (!Number.isInteger(overlap) || overlap < 0 || overlap >= size) throw new RangeError(`chunk overlap must be an integer in [0, size), got ${overlap}`);
  const chars = Array.from(text.replace(/\r\n?/g, '\n'));
  const out: string[] = [];
  let start = 0;
  while (start < chars.length) {
    let end = Math.min(start + size, chars.length);
    if (end < chars.length) end = naturalEnd(chars, start, end);
    const piece = chars.slice(start, end).join('').trim();
    if (piece) out.push(piece);
    if (end >= chars.length) break;
    // Always move forward, also when the overlap reaches back past the piece's start.
    start = Math.max(end - overlap, start + 1);
  }
  return out;
}

const BREAKS = ['\n\n', '\n', '. ', '。', '! ', '? ', '！', '？', ' '];

function naturalEnd(chars: string[], start: number, end: number): number {
  const half = start + Math.floor((end - start) / 2);
  for (const mark of BREAKS) {
    const m = Array.from(mark);
    for (let i = end - m.length; i >= half; i--) {
      if (m.every((c, j) => chars[i + j] === c)) return i + m.length;
    }
  }
  return end;
}
