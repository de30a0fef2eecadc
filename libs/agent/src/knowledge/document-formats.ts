// Text of the document formats that are zip archives of XML (XLSX, EPUB) or markup (HTML). Every read
// from an archive is bounded while it inflates: a small file that unpacks to gigabytes (a zip bomb)
// stops at the bound instead of filling the runner's memory.
import { XMLParser } from 'fast-xml-parser';
import { convert } from 'html-to-text';
import JSZip from 'jszip';

/** Bytes one archive may unpack to in total; well above any real spreadsheet or book's text. */
export const MAX_ARCHIVE_UNPACKED_BYTES = 64 * 1_048_576;
/** Sheets or book sections read from one file. */
const MAX_PARTS = 2_000;

/** A bound a document broke while being read; the ingestion reports it as an unreadable document. */
export class DocumentBoundError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DocumentBoundError';
  }
}

const xml = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@',
  removeNSPrefix: true,
  // Text stays text: a cell of "007" or "1e3" must not become a number.
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false,
  processEntities: true,
  isArray: (name) => ['sheet', 'Relationship', 'si', 'r', 'row', 'c', 'item', 'itemref', 'rootfile'].includes(name),
});

/** An archive's entries read as UTF-8, each counted against one shared bound as it inflates. */
class BoundedArchive {
  private unpacked = 0;
  private constructor(private readonly zip: JSZip) {}

  static async open(content: Buffer): Promise<BoundedArchive> {
    return new BoundedArchive(await JSZip.loadAsync(content));
  }

  /** The entry's text, or undefined when the archive has no such entry. */
  async text(path: string): Promise<string | undefined> {
    const entry = this.zip.file(path);
    if (!entry) return undefined;
    const chunks: Buffer[] = [];
    await new Promise<void>((resolve, reject) => {
      const stream = entry.nodeStream('nodebuffer');
      stream
        .on('data', (chunk: Buffer) => {
          this.unpacked += chunk.byteLength;
          if (this.unpacked > MAX_ARCHIVE_UNPACKED_BYTES) {
            // Paused, the inflation stops here; the bytes read so far go with the rejected promise.
            stream.pause();
            stream.removeAllListeners('data');
            reject(new DocumentBoundError(`the archive unpacks to more than ${MAX_ARCHIVE_UNPACKED_BYTES} bytes`));
            return;
          }
          chunks.push(chunk);
        })
        .on('error', reject)
        .on('end', () => resolve());
    });
    return new TextDecoder('utf-8').decode(Buffer.concat(chunks)).replace(/^\uFEFF/, '');
  }

  async xml(path: string): Promise<Record<string, unknown> | undefined> {
    const text = await this.text(path);
    return text === undefined ? undefined : (xml.parse(text) as Record<string, unknown>);
  }
}

/** A parsed XML node's child by name, as an object (absent or text: an empty object). */
function child(node: unknown, name: string): Record<string, unknown> {
  const value = node && typeof node === 'object' ? (node as Record<string, unknown>)[name] : undefined;
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** A parsed XML node's repeated children by name. */
function children(node: unknown, name: string): Array<Record<string, unknown>> {
  const value = node && typeof node === 'object' ? (node as Record<string, unknown>)[name] : undefined;
  return Array.isArray(value) ? value.filter((v): v is Record<string, unknown> => !!v && typeof v === 'object') : [];
}

/** A node's text: a plain value, or its `#text`. */
function textOf(node: unknown): string {
  if (typeof node === 'string' || typeof node === 'number') return String(node);
  if (node && typeof node === 'object' && '#text' in node) return textOf((node as Record<string, unknown>)['#text']);
  return '';
}

const attr = (node: Record<string, unknown>, name: string) => {
  const value = node[`@${name}`];
  return typeof value === 'string' ? value : undefined;
};

/** A path inside an archive resolved against the folder of the file that names it. */
function resolveInArchive(base: string, target: string): string {
  if (target.startsWith('/')) return target.slice(1);
  const parts = base.split('/').slice(0, -1);
  for (const part of decodeURIComponent(target.split('#')[0]).split('/')) {
    if (part === '..') parts.pop();
    else if (part && part !== '.') parts.push(part);
  }
  return parts.join('/');
}

/** An HTML (or XHTML) page as plain text: headings, paragraphs and list items on their own lines, no links' targets, no scripts. */
export function htmlText(html: string): string {
  return convert(html, {
    wordwrap: false,
    selectors: [
      { selector: 'a', options: { ignoreHref: true } },
      { selector: 'img', format: 'skip' },
      { selector: 'script', format: 'skip' },
      { selector: 'style', format: 'skip' },
      { selector: 'h1', options: { uppercase: false } },
      { selector: 'h2', options: { uppercase: false } },
      { selector: 'h3', options: { uppercase: false } },
      { selector: 'h4', options: { uppercase: false } },
      { selector: 'h5', options: { uppercase: false } },
      { selector: 'h6', options: { uppercase: false } },
      { selector: 'table', format: 'dataTable', options: { uppercaseHeaderCells: false } },
    ],
  }).trim();
}

/**
 * A workbook's sheets, each under a `# <sheet>` line, one paragraph per row with every cell named by
 * its column's header (the first row): "Header: value; Header: value". A row of a retrieval chunk then
 * says what its numbers are, as LangBot's and Dify's spreadsheet parsers do.
 */
export async function xlsxText(content: Buffer): Promise<string> {
  const archive = await BoundedArchive.open(content);
  const workbook = await archive.xml('xl/workbook.xml');
  if (!workbook) throw new Error('not a workbook: xl/workbook.xml is missing');
  const rels = await archive.xml('xl/_rels/workbook.xml.rels');
  const targets = new Map(children(child(rels, 'Relationships'), 'Relationship').map((r) => [attr(r, 'Id'), attr(r, 'Target')]));
  const shared = children(child(await archive.xml('xl/sharedStrings.xml'), 'sst'), 'si').map(richText);
  const sheets = children(child(child(workbook, 'workbook'), 'sheets'), 'sheet').slice(0, MAX_PARTS);
  const out: string[] = [];
  for (const sheet of sheets) {
    const target = targets.get(attr(sheet, 'id'));
    if (!target) continue;
    const data = await archive.xml(resolveInArchive('xl/workbook.xml', target));
    const rows = children(child(child(data, 'worksheet'), 'sheetData'), 'row').map((row) => cellsOf(row, shared));
    const [header = [], ...body] = rows.filter((r) => r.some((v) => v !== ''));
    const lines = body.map((row) => row.map((value, i) => (value === '' ? '' : header[i] ? `${header[i]}: ${value}` : value)).filter(Boolean).join('; '));
    out.push([`# ${attr(sheet, 'name') ?? 'Sheet'}`, ...(body.length ? lines : [header.filter(Boolean).join('; ')])].join('\n\n'));
  }
  return out.join('\n\n');
}

/** A shared or inline string: its `t`, or the `t` of each of its runs. */
function richText(si: Record<string, unknown>): string {
  const runs = children(si, 'r');
  return runs.length ? runs.map((r) => textOf(r.t)).join('') : textOf(si.t);
}

/** A row's cell values placed by their column letters (a sparse row leaves gaps empty). */
function cellsOf(row: Record<string, unknown>, shared: string[]): string[] {
  const values: string[] = [];
  for (const [i, c] of children(row, 'c').entries()) {
    const ref = attr(c, 'r');
    const column = ref ? columnIndex(ref) : i;
    const type = attr(c, 't');
    const raw = textOf(c.v);
    const value = type === 's' ? shared[Number(raw)] ?? '' : type === 'inlineStr' ? richText(child(c, 'is')) : type === 'b' ? (raw === '1' ? 'TRUE' : 'FALSE') : raw;
    if (column < 16_384) values[column] = value.trim();
  }
  return Array.from(values, (v) => v ?? '');
}

/** "C7" → 2: the column letters of a cell reference, zero-based. */
function columnIndex(ref: string): number {
  let n = 0;
  for (const ch of /^[A-Z]+/.exec(ref)?.[0] ?? 'A') n = n * 26 + (ch.charCodeAt(0) - 64);
  return n - 1;
}

/** A book's text in reading order: the package's spine, each section's XHTML as plain text. */
export async function epubText(content: Buffer): Promise<string> {
  const archive = await BoundedArchive.open(content);
  const container = await archive.xml('META-INF/container.xml');
  const opfPath = children(child(child(container, 'container'), 'rootfiles'), 'rootfile').map((r) => attr(r, 'full-path')).find(Boolean);
  if (!opfPath) throw new Error('not an EPUB: META-INF/container.xml names no package');
  const opf = child(await archive.xml(opfPath), 'package');
  const items = new Map(children(child(opf, 'manifest'), 'item').map((i) => [attr(i, 'id'), attr(i, 'href')]));
  const sections: string[] = [];
  for (const ref of children(child(opf, 'spine'), 'itemref').slice(0, MAX_PARTS)) {
    const href = items.get(attr(ref, 'idref'));
    if (!href) continue;
    const page = await archive.text(resolveInArchive(opfPath, href));
    if (page) sections.push(htmlText(page));
  }
  return sections.filter(Boolean).join('\n\n');
}
