import type { Segment } from './parse.js';

const unescape = (s: string, inParam: boolean) =>
  s.replace(inParam ? /&(amp|#91|#93|#44);/g : /&(amp|#91|#93);/g, (_, e: string) => ({ amp: '&', '#91': '[', '#93': ']', '#44': ',' })[e] ?? '');

/**
 * OneBot's string message format (`[CQ:at,qq=123]hello`), for implementations configured to post
 * strings instead of segment arrays. Bounded by the string's length; unknown codes keep their type.
 */
export function parseCqString(message: string): Segment[] {
  const out: Segment[] = [];
  const re = /\[CQ:([a-zA-Z0-9_.-]+)((?:,[^\]]*)?)\]/g;
  let last = 0;
  for (let m = re.exec(message); m; m = re.exec(message)) {
    if (m.index > last) out.push({ type: 'text', data: { text: unescape(message.slice(last, m.index), false) } });
    const data: Record<string, unknown> = {};
    for (const pair of m[2].split(',').slice(1)) {
      const eq = pair.indexOf('=');
      if (eq > 0) data[pair.slice(0, eq)] = unescape(pair.slice(eq + 1), true);
    }
    out.push({ type: m[1], data });
    last = m.index + m[0].length;
  }
  if (last < message.length) out.push({ type: 'text', data: { text: unescape(message.slice(last), false) } });
  return out;
}
