import { test } from 'node:test';
import assert from 'node:assert/strict';
import JSZip from 'jszip';
import { documentText } from './ingest.js';
import { KnowledgeError } from './embeddings.js';

/** A one-page PDF with one text line per entry (Helvetica), with a correct cross-reference table. */
function pdfWithLines(lines: string[]): Buffer {
  const stream = `BT /F1 12 Tf 72 720 Td ${lines.map((l, i) => `${i ? '0 -16 Td ' : ''}(${l}) Tj`).join(' ')} ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(out.length);
    out += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = out.length;
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

/** A minimal Word document with one paragraph per entry. */
async function docxWithParagraphs(paragraphs: string[]): Promise<Buffer> {
  const zip = new JSZip();
  zip.file('[Content_Types].xml', '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>');
  zip.file('_rels/.rels', '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>');
  zip.file('word/document.xml', `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${paragraphs.map((p) => `<w:p><w:r><w:t>${p}</w:t></w:r></w:p>`).join('')}</w:body></w:document>`);
  return zip.generateAsync({ type: 'nodebuffer' });
}

test('PDF text comes out of its pages', async () => {
  const text = await documentText({ name: 'a.pdf', type: 'pdf', content: pdfWithLines(['Refunds take five days.', 'Call support first.']) });
  assert.match(text, /Refunds take five days\.\s+Call support first\./);
});

test('DOCX paragraphs come out as lines', async () => {
  const text = await documentText({ name: 'a.docx', type: 'docx', content: await docxWithParagraphs(['Opening hours', 'Nine to five']) });
  assert.match(text, /Opening hours\s+Nine to five/);
});

test('text and Markdown decode as UTF-8 without a byte order mark; broken files fail with a code', async () => {
  assert.equal(await documentText({ name: 'a.md', type: 'markdown', content: Buffer.from('\uFEFF# Title ✓') }), '# Title ✓');
  for (const type of ['pdf', 'docx']) {
    await assert.rejects(documentText({ name: `broken.${type}`, type, content: Buffer.from('not a real file') }), (err: unknown) => err instanceof KnowledgeError && err.code === 'document_unreadable');
  }
});

const zipOf = (files: Record<string, string>) => {
  const zip = new JSZip();
  for (const [name, text] of Object.entries(files)) zip.file(name, text);
  return zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' });
};

test('HTML reads as its text: headings and paragraphs on their own lines, no scripts, styles or link targets', async () => {
  const html = '<html><head><style>p{color:red}</style><script>alert(1)</script></head><body><h1>Returns</h1><p>Send it back within <b>30 days</b>, see <a href="https://x.test/policy">the policy</a>.</p><ul><li>退款五天内到账</li></ul></body></html>';
  const text = await documentText({ name: 'a.html', type: 'html', content: Buffer.from(html) });
  assert.match(text, /^Returns\n/);
  assert.match(text, /Send it back within 30 days, see the policy\./);
  assert.match(text, /退款五天内到账/);
  assert.doesNotMatch(text, /alert|color|x\.test/);
});

test('a workbook reads as one paragraph per row, each value named by its column header, sheet by sheet', async () => {
  const content = await zipOf({
    'xl/workbook.xml': '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Prices" sheetId="1" r:id="rId1"/><sheet name="空表" sheetId="2" r:id="rId2"/></sheets></workbook>',
    'xl/_rels/workbook.xml.rels': '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Target="/xl/worksheets/sheet2.xml"/></Relationships>',
    'xl/sharedStrings.xml': '<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si><t>Plan</t></si><si><t>Price</t></si><si><r><t>Pro</t></r><r><t xml:space="preserve"> plan</t></r></si></sst>',
    'xl/worksheets/sheet1.xml': '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c><c r="C1" t="inlineStr"><is><t>Code</t></is></c></row><row r="2"><c r="A2" t="s"><v>2</v></c><c r="B2"><v>12.5</v></c><c r="C2" t="str"><v>007</v></c></row><row r="3"><c r="B3"><v>3</v></c></row></sheetData></worksheet>',
    'xl/worksheets/sheet2.xml': '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData/></worksheet>',
  });
  const text = await documentText({ name: 'p.xlsx', type: 'xlsx', content });
  assert.equal(text, '# Prices\n\nPlan: Pro plan; Price: 12.5; Code: 007\n\nPrice: 3\n\n# 空表\n\n');
  await assert.rejects(documentText({ name: 'x.xlsx', type: 'xlsx', content: await zipOf({ 'a.txt': 'x' }) }), (err: unknown) => err instanceof KnowledgeError && err.code === 'document_unreadable' && /workbook/.test(err.message));
});

test('a book reads its sections in spine order, whatever the manifest order', async () => {
  const content = await zipOf({
    mimetype: 'application/epub+zip',
    'META-INF/container.xml': '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container" version="1.0"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>',
    'OEBPS/content.opf': '<package xmlns="http://www.idpf.org/2007/opf" version="3.0"><manifest><item id="c2" href="text/ch%202.xhtml" media-type="application/xhtml+xml"/><item id="c1" href="text/ch1.xhtml" media-type="application/xhtml+xml"/></manifest><spine><itemref idref="c1"/><itemref idref="c2"/></spine></package>',
    'OEBPS/text/ch1.xhtml': '<html xmlns="http://www.w3.org/1999/xhtml"><body><h2>第一回</h2><p>话说天下大势，分久必合，合久必分。</p></body></html>',
    'OEBPS/text/ch 2.xhtml': '<html xmlns="http://www.w3.org/1999/xhtml"><body><p>Chapter two &amp; more.</p></body></html>',
  });
  assert.equal(await documentText({ name: 'b.epub', type: 'epub', content }), '第一回\n\n话说天下大势，分久必合，合久必分。\n\nChapter two & more.');
});

test('an archive that unpacks past the bound fails as unreadable instead of filling memory', async () => {
  const zip = new JSZip();
  zip.file('xl/workbook.xml', '<workbook><sheets><sheet name="a" r:id="rId1"/></sheets></workbook>');
  zip.file('xl/sharedStrings.xml', Buffer.alloc(65 * 1_048_576, 0x20));
  const content = await zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' });
  assert.ok(content.byteLength < 1_048_576, 'the file itself is small');
  await assert.rejects(documentText({ name: 'bomb.xlsx', type: 'xlsx', content }), (err: unknown) => err instanceof KnowledgeError && err.code === 'document_unreadable' && /unpacks to more than/.test(err.message));
});
