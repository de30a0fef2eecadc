import { fileURLToPath } from 'node:url';
import type { TextRenderer } from '../engine/ports.js';

/**
 * Long text as a PNG, LangBot's image strategy: 32 px font, 800 px canvas with a 720 px
 * text area, lines 35 px apart from (20, 30), height max(280, lines × 35 + 65), black on white.
 *
 * Bounds, all LangBot's: at most 100,000 characters, 256 lines (wrapping stops at line 257, so a huge
 * reply costs a few hundred measurements, not a full layout), 8 M pixels (256 lines give 800 × 9025 =
 * 7.2 M, about 29 MB of RGBA) and a 10 MiB PNG. Past any of them the reply goes out as a forward rather
 * than a truncated image, so no text is lost. At most two renders run at once per process, which keeps
 * the canvases' peak memory near 60 MB whatever the pipeline concurrency.
 */
export const PNG_LIMITS = {
  width: 800,
  textWidth: 720,
  fontSize: 32,
  lineHeight: 35,
  x: 20,
  y: 30,
  minHeight: 280,
  maxChars: 100_000,
  maxLines: 256,
  maxPixels: 8_000_000,
  maxBytes: 10 * 1024 * 1024,
  concurrency: 2,
} as const;

/** The text is over a limit: the caller sends a forward instead (LangBot's capacity error). */
export class RenderCapacityError extends Error {}

/** Noto Sans CJK SC ("Noto Sans Hans") Regular from @embedpdf/fonts-sc, OFL-1.1. */
export function packagedFontPath(): string {
  return fileURLToPath(new URL('../fonts/NotoSansHans-Regular.otf', import.meta.resolve('@embedpdf/fonts-sc')));
}

/**
 * Wraps text into lines no wider than maxWidth by measured width, as LangBot does: tabs become four
 * spaces, empty lines stay, a break never falls inside a run of digits unless the run starts the line,
 * and every line takes at least one character. Works on code points, so surrogate pairs stay whole.
 * Returns null once the text needs more than maxLines lines.
 */
export function wrapLines(text: string, measure: (s: string) => number, maxWidth: number, maxLines: number): string[] | null {
  const out: string[] = [];
  for (const raw of text.replace(/\r\n?/g, '\n').replace(/\t/g, '    ').split('\n')) {
    const cps = Array.from(raw);
    let start = 0;
    do {
      const end = start + fitCount(cps, start, measure, maxWidth);
      let cut = end;
      if (cut < cps.length && isDigit(cps[cut - 1]) && isDigit(cps[cut])) {
        let runStart = cut - 1;
        while (runStart > start && isDigit(cps[runStart - 1])) runStart--;
        if (runStart > start) cut = runStart;
      }
      if (out.length >= maxLines) return null;
      out.push(cps.slice(start, cut).join(''));
      start = cut;
    } while (start < cps.length);
  }
  return out;
}

/** How many code points from start fit in maxWidth (at least one): doubling probes, then bisection. */
function fitCount(cps: string[], start: number, measure: (s: string) => number, maxWidth: number): number {
  const left = cps.length - start;
  if (left <= 1) return left;
  const fits = (n: number) => measure(cps.slice(start, start + n).join('')) <= maxWidth;
  let lo = 1;
  let hi = Math.min(64, left);
  while (fits(hi)) {
    if (hi === left) return left;
    lo = hi;
    hi = Math.min(hi * 2, left);
  }
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (fits(mid)) lo = mid; else hi = mid;
  }
  return lo;
}

function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= '0' && c <= '9';
}

type Canvas = typeof import('@napi-rs/canvas');
let canvasModule: Promise<Canvas> | undefined;
/** Loaded on first render, so services that never render skip the native module. */
function canvas(): Promise<Canvas> {
  return (canvasModule ??= import('@napi-rs/canvas'));
}

const families = new Map<string, string>();
function family(c: Canvas, fontPath: string): string {
  let name = families.get(fontPath);
  if (!name) {
    name = `conveyor-long-text-${families.size}`;
    if (!c.GlobalFonts.registerFromPath(fontPath, name)) throw new Error(`cannot load the long-text font ${fontPath}`);
    families.set(fontPath, name);
  }
  return name;
}

let running = 0;
const waiting: Array<() => void> = [];
/** At most PNG_LIMITS.concurrency renders at once; a finishing render hands its slot to the next. */
async function limited<T>(fn: () => Promise<T>): Promise<T> {
  if (running < PNG_LIMITS.concurrency) running++;
  else await new Promise<void>((resolve) => waiting.push(resolve));
  try {
    return await fn();
  } finally {
    const next = waiting.shift();
    if (next) next(); else running--;
  }
}

/**
 * Renders text as a PNG. fontPath '' uses the packaged CJK font; any other font comes first with the
 * packaged one behind it for the glyphs it lacks. Throws RenderCapacityError past a limit and a plain
 * Error when the font cannot be loaded.
 */
export function renderTextPng(text: string, fontPath = ''): Promise<Buffer> {
  if (Array.from(text).length > PNG_LIMITS.maxChars) return Promise.reject(new RenderCapacityError(`long text over ${PNG_LIMITS.maxChars} characters`));
  return limited(async () => {
    const c = await canvas();
    const L = PNG_LIMITS;
    const packaged = family(c, packagedFontPath());
    const fonts = fontPath && fontPath !== packagedFontPath() ? [family(c, fontPath), packaged] : [packaged];
    const font = `${L.fontSize}px ${fonts.map((f) => `"${f}"`).join(', ')}`;

    const measuring = c.createCanvas(1, 1).getContext('2d');
    measuring.font = font;
    const lines = wrapLines(text, (s) => measuring.measureText(s).width, L.textWidth, L.maxLines);
    if (!lines) throw new RenderCapacityError(`long text over ${L.maxLines} lines`);
    const height = Math.max(L.minHeight, lines.length * L.lineHeight + 65);
    if (L.width * height > L.maxPixels) throw new RenderCapacityError(`long-text image over ${L.maxPixels} pixels`);

    const page = c.createCanvas(L.width, height);
    const ctx = page.getContext('2d');
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, L.width, height);
    ctx.fillStyle = '#000000';
    ctx.font = font;
    ctx.textBaseline = 'top';
    lines.forEach((line, i) => { if (line) ctx.fillText(line, L.x, L.y + i * L.lineHeight); });
    const png = await page.encode('png');
    if (png.length > L.maxBytes) throw new RenderCapacityError(`long-text image over ${L.maxBytes} bytes`);
    return png;
  });
}

/** The TextRenderer the stage uses: raw base64 (no data: prefix), or null past a limit. */
export const pngRenderer: TextRenderer = {
  async render(text, fontPath) {
    try {
      return (await renderTextPng(text, fontPath)).toString('base64');
    } catch (err) {
      if (err instanceof RenderCapacityError) return null;
      throw err;
    }
  },
};
