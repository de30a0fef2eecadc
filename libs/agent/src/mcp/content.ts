import type { ContentPart } from '@conveyor/contracts';
import { ContentResult } from '../tools.js';

/** Embedded text resources are cut here (LangBot: 64 KB). */
const MAX_RESOURCE_TEXT = 64 * 1024;

type McpContent =
  | { type: 'text'; text: string }
  | { type: 'image'; data: string; mimeType: string }
  | { type: 'audio'; data: string; mimeType: string }
  | { type: 'resource_link'; uri: string; name?: string; mimeType?: string; description?: string }
  | { type: 'resource'; resource: { uri: string; mimeType?: string; text?: string; blob?: string } }
  | { type: string; [k: string]: unknown };

export class McpToolError extends Error {}

/**
 * An MCP `tools/call` result as message content, turned as LangBot turns it: text stays text, images become data
 * URLs, other kinds become short JSON descriptions. `isError` results throw, so the model gets `err: …`.
 */
export function toContentResult(result: { content?: unknown; isError?: boolean; structuredContent?: unknown }): ContentResult {
  const items = (Array.isArray(result.content) ? result.content : []) as McpContent[];
  if (result.isError) {
    const text = items.map((c) => (c.type === 'text' ? (c as { text: string }).text : '')).filter(Boolean).join('\n');
    throw new McpToolError(text || 'the MCP tool reported an error');
  }
  const parts: ContentPart[] = items.map((c): ContentPart => {
    switch (c.type) {
      case 'text':
        return { type: 'text', text: (c as { text: string }).text };
      case 'image': {
        const img = c as { data: string; mimeType: string };
        return { type: 'image_url', image_url: { url: `data:${img.mimeType};base64,${img.data}` } };
      }
      case 'audio':
        return { type: 'text', text: JSON.stringify({ type: 'audio', mimeType: (c as { mimeType: string }).mimeType, note: 'audio content omitted' }) };
      case 'resource_link': {
        const { uri, name, mimeType, description } = c as { uri: string; name?: string; mimeType?: string; description?: string };
        return { type: 'text', text: JSON.stringify({ type: 'resource_link', uri, name, mimeType, description }) };
      }
      case 'resource': {
        const r = (c as { resource: { uri: string; mimeType?: string; text?: string; blob?: string } }).resource;
        if (typeof r.text === 'string') {
          const cut = r.text.length > MAX_RESOURCE_TEXT;
          return { type: 'text', text: `${JSON.stringify({ type: 'resource', uri: r.uri, mimeType: r.mimeType, truncated: cut })}\n${r.text.slice(0, MAX_RESOURCE_TEXT)}` };
        }
        return { type: 'text', text: JSON.stringify({ type: 'resource', uri: r.uri, mimeType: r.mimeType, blobBytes: Math.floor(((r.blob ?? '').length * 3) / 4) }) };
      }
      default:
        return { type: 'text', text: JSON.stringify({ type: c.type, note: 'unsupported MCP content' }) };
    }
  });
  // No content but structured output: pass the structure as text rather than an empty result.
  if (parts.length === 0 && result.structuredContent !== undefined) parts.push({ type: 'text', text: JSON.stringify(result.structuredContent) });
  return new ContentResult(parts);
}
