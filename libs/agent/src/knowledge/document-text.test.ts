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
